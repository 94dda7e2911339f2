import { createCheckpointActivities } from './checkpoints.js';
import { createCompactionActivities } from './compaction.js';
import { createCriticActivities } from './critic.js';
import { createFileToolActivities } from './file-tools.js';
import type { ActivityDeps } from './deps.js';
import { createLlmActivities } from './llm.js';
import { createToolActivities } from './tools.js';
import { createVerifyActivities } from './verify.js';
import { createWorkspaceActivities } from './workspace.js';

/** All of Tether's activities over their dependencies; workflows import the type only. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createLlmActivities(deps),
    ...createToolActivities(deps),
    ...createFileToolActivities(deps),
    ...createVerifyActivities(deps),
    ...createCompactionActivities(deps),
    ...createCriticActivities(deps),
    ...createWorkspaceActivities(deps),
    ...createCheckpointActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
export type { ActivityDeps } from './deps.js';
