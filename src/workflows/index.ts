export { agentRun } from './agent-run.js';
export { fleetControl } from './fleet.js';
export { critic } from './critic.js';
