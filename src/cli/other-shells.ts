import { temporalSettings } from '../api/settings.js';

const portOf = (address: string) => address.slice(address.lastIndexOf(':') + 1);

/** The variables a `tether` command in another shell needs to reach a server at `address`: only those that differ from the defaults. */
export function settingsForOtherShells(address: string, reach: { namespace: string; taskQueue: string }): string {
  const defaults = temporalSettings({});
  return [
    ...(portOf(address) === portOf(defaults.address) ? [] : [`TEMPORAL_ADDRESS=${address}`]),
    ...(reach.namespace === defaults.namespace ? [] : [`TEMPORAL_NAMESPACE=${reach.namespace}`]),
    ...(reach.taskQueue === defaults.taskQueue ? [] : [`TETHER_TASK_QUEUE=${reach.taskQueue}`]),
  ].join(' ');
}
