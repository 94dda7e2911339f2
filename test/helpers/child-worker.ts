import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('./worker-main.ts', import.meta.url));

/** Starts a worker in a child process and resolves once it polls. */
export async function startChildWorker(env: Record<string, string>): Promise<ChildProcess & { output: () => string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
    env: { ...process.env, TETHER_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`child worker did not start:\n${output}`)), 60_000);
    child.stdout!.on('data', () => {
      if (output.includes('worker-ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`child worker exited ${code}:\n${output}`));
    });
  });
  return Object.assign(child, { output: () => output });
}
