import type { DoctorCheck } from '../ops/doctor.js';
import { get } from 'node:http';
import { portFree } from './ports.js';

/**
 * `tether doctor`'s look at the panel's port: free, already a Tether panel
 * (it answers /live), or taken by another program, with the flags that move
 * the panel elsewhere.
 */
export async function panelPortCheck(port: number): Promise<DoctorCheck> {
  const name = 'panel port';
  if (await portFree(port)) return { name, status: 'ok', detail: `${port} is free for \`tether panel\`, \`tether dev\` and \`tether demo\`` };
  if (await answersLive(port)) return { name, status: 'ok', detail: `${port} serves a Tether panel already` };
  return {
    name,
    status: 'warn',
    detail: `${port} is taken by another program`,
    fix: `pick a free port: tether panel --port <port>, tether dev --panel-port <port>, tether demo --panel-port <port>`,
  };
}

/**
 * Whether a Tether service answers GET /live on the port. Plain node:http: its
 * socket keeps the process alive while it waits, where fetch's unref'd timeout
 * would let the event loop run dry against a server that hangs up.
 */
function answersLive(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const request = get({ host: '127.0.0.1', port, path: '/live', timeout: 2_000 }, (response) => {
      response.resume();
      resolve(response.statusCode === 200);
    });
    request.once('timeout', () => request.destroy());
    request.once('error', () => resolve(false));
  });
}
