/**
 * Workspace escapes through the file tools: `..`, absolute paths, a symlink
 * to a directory outside and to /etc, a hard link to a file outside, and a
 * directory swapped for a symlink while writes go on. The links are made by
 * this process (as a checked-out repository could hold them), so the test
 * does not depend on what the shell sandbox allows. Expected: 0 escapes —
 * nothing written outside, nothing read from outside.
 */
import { link, mkdir, readdir, readFile, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { getTranscript, startRun, type TetherClient } from '../../../src/client/runs.js';
import type { Script } from '../../../src/scripted/script.js';
import type { Scenario } from '../context.js';
import { resultWithin, scriptedServer } from '../stack.js';
import { describe } from './fault-storm.js';

const SENTINEL = 'OUTSIDE-SENTINEL-7f3a';
const SWAP_WRITES = 30;

function script(outside: string): Script {
  const write = (p: string) => ({ reply: { toolCalls: [{ name: 'write_file', args: { path: p, content: 'escaped' } }] } });
  const read = (p: string) => ({ reply: { toolCalls: [{ name: 'read_file', args: { path: p } }] } });
  const attempts = [
    write('../escape-dotdot.txt'),
    write(`../${path.basename(outside)}/dotdot.txt`),
    write(path.join(outside, 'absolute.txt')),
    write('/etc/tether-chaos-absolute'),
    read(path.join(outside, 'secret.txt')),
    read(`../${path.basename(outside)}/secret.txt`),
    read('/etc/passwd'),
    write('link/via-symlink.txt'),
    read('link/secret.txt'),
    write('etc/tether-chaos-symlink'),
    read('etc/passwd'),
    read('hard.txt'),
    write('hard.txt'),
    write('inside/../../escape-normalised.txt'),
  ];
  return {
    steps: [...attempts, { ...write('swap/f{{step}}.txt'), repeat: SWAP_WRITES }],
    after: { toolCalls: [{ name: 'finish', args: { summary: 'tried every way out' } }] },
  } as Script;
}

export const escapes: Scenario = async (ctx) => {
  const root = await ctx.stack.tempDir('escape');
  const { workspace, outside } = await plantWaysOut(root);
  const scripted = await scriptedServer({ escape: script(outside) });
  const taskQueue = `chaos-escape-${Date.now()}`;
  const worker = await ctx.stack.startWorker({ TETHER_TASK_QUEUE: taskQueue, TETHER_SCRIPTED_URL: scripted.url });
  const tc = await ctx.stack.connect(taskQueue);
  const problems: string[] = [];
  let swapping = true;
  try {
    const { runId } = await startRun(tc, {
      goal: 'escape',
      model: 'scripted:escape',
      workspace,
      critic: { policy: 'off' },
      limits: { maxConsecutiveErrors: 1_000 },
    });
    const swaps = swapLoop(workspace, path.join(outside, 'swapped'), () => swapping);
    const r = await resultWithin(tc, runId, 240_000);
    swapping = false;
    const swapCount = await swaps;
    if ('lost' in r) problems.push(`the run did not end: ${describe(r)}`);
    problems.push(...(await readsFromOutside(tc, runId)), ...(await writesOutside(root, outside)));
    return {
      name: 'workspace escapes',
      faults: 14 + SWAP_WRITES,
      runs: 1,
      lost: problems.length,
      figures: { attempts: 14 + SWAP_WRITES, swaps: swapCount, escapes: problems.length },
      problems,
    };
  } finally {
    swapping = false;
    await tc.close();
    await worker.kill('SIGTERM');
    await scripted.close();
  }
};

/**
 * The workspace and the directory outside it, with the ways out the links give: a symlink to the directory outside
 * and to /etc, and a hard link to the file outside.
 */
async function plantWaysOut(root: string): Promise<{ workspace: string; outside: string }> {
  const workspace = path.join(root, 'ws');
  const outside = path.join(root, 'outside');
  await mkdir(path.join(outside, 'swapped'), { recursive: true });
  await mkdir(path.join(workspace, 'swap'), { recursive: true });
  await writeFile(path.join(outside, 'secret.txt'), SENTINEL);
  await symlink(outside, path.join(workspace, 'link'));
  await symlink('/etc', path.join(workspace, 'etc'));
  await link(path.join(outside, 'secret.txt'), path.join(workspace, 'hard.txt'));
  return { workspace, outside };
}

/** Tool results in the run's transcript that carry the file outside or /etc/passwd. */
async function readsFromOutside(tc: TetherClient, runId: string): Promise<string[]> {
  const problems: string[] = [];
  const messages = await getTranscript(tc, runId).catch(() => []);
  const calls = new Map(messages.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []) : [])).map((c) => [c.id, JSON.stringify(c.args)]));
  for (const m of messages) {
    if (m.role !== 'tool') continue;
    if (m.content.includes(SENTINEL)) problems.push(`${m.toolName} ${calls.get(m.toolCallId)} returned the content of the file outside the workspace`);
    if (/root:x?:0:0/.test(m.content)) problems.push(`${m.toolName} ${calls.get(m.toolCallId)} returned /etc/passwd`);
  }
  return problems;
}

/** Files written or changed outside the workspace. */
async function writesOutside(root: string, outside: string): Promise<string[]> {
  const problems: string[] = [];
  const outsideNow = (await readdir(outside)).sort().join(',');
  if (outsideNow !== 'secret.txt,swapped') problems.push(`files appeared outside the workspace: ${outsideNow}`);
  if ((await readFile(path.join(outside, 'secret.txt'), 'utf8')) !== SENTINEL) problems.push('the file outside was changed through its hard link');
  const swapped = await readdir(path.join(outside, 'swapped'));
  if (swapped.length) problems.push(`writes landed outside through the swapped symlink: ${swapped.join(', ')}`);
  for (const p of [path.join(root, 'escape-dotdot.txt'), path.join(root, 'escape-normalised.txt'), '/etc/tether-chaos-absolute', '/etc/tether-chaos-symlink']) {
    if (await stat(p).catch(() => null)) problems.push(`${p} was written`);
  }
  return problems;
}

/** Swaps `ws/swap` between a directory and a symlink to `target` until told to stop; returns how many swaps it made. */
async function swapLoop(workspace: string, target: string, going: () => boolean): Promise<number> {
  const swap = path.join(workspace, 'swap');
  const spare = path.join(workspace, '.swap-spare');
  let count = 0;
  while (going()) {
    try {
      await symlink(target, spare);
      await rm(swap, { recursive: true, force: true });
      await rename(spare, swap);
      await sleep(2);
      await rm(swap, { force: true });
      await mkdir(swap);
      count++;
    } catch {
      await rm(spare, { recursive: true, force: true });
    }
    await sleep(1);
  }
  return count;
}
