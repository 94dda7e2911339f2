/**
 * Libraries and schemas every workflow shares instead of evaluating its own copy.
 *
 * The SDK evaluates a workflow's modules afresh for every run it caches, so
 * each run in flight held its own zod (~1 MiB, ~5 ms of the workflow thread)
 * and its own copy of Tether's schemas (~240 KiB, ~2 ms). A module named in
 * the bundle's `preloadModules` is evaluated once, before any workflow, with
 * everything it imports, and then deep-frozen.
 *
 * - zod keeps two pieces of global state that it sets on the first schema
 *   built (the English error map and the memoizer of recursive containers);
 *   setting them after the freeze fails the workflow task. Building one
 *   container schema here sets both before the freeze.
 * - zod installs some members of a schema on first read, which a frozen
 *   schema refuses: every schema of these modules is used here first
 *   (warm-schemas.ts), so nothing is left to change.
 */
import { z } from 'zod';
import * as control from '../api/control.js';
import * as duration from '../api/duration.js';
import * as messageSchemas from '../api/message-schemas.js';
import * as spec from '../api/spec.js';
import * as tools from '../api/tools.js';
import * as llmDecision from '../critic/llm-decision.js';
import { warmSchemas } from './warm-schemas.js';

const warmUp = z.object({ names: z.array(z.string()) });
if (!warmUp.safeParse({ names: [] }).success || !z.config().localeError) {
  throw new Error('zod did not set up its global state before the workflow sandbox froze it');
}

/** The modules whose schemas every run shares. */
export const SHARED_SCHEMA_MODULES = [control, duration, messageSchemas, spec, tools, llmDecision];
if (warmSchemas(SHARED_SCHEMA_MODULES.map((module) => Object.values(module))) === 0) throw new Error('no schema to share was found');
