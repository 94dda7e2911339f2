/**
 * Libraries every workflow shares instead of evaluating its own copy.
 *
 * The SDK evaluates a workflow's modules afresh for every run it caches, so
 * each run in flight held its own zod: ~1 MiB and ~5 ms of the workflow
 * thread a run. A module named in the bundle's `preloadModules` is evaluated
 * once, before any workflow, and then deep-frozen. zod keeps two pieces of
 * global state that it sets on the first schema built (the English error map
 * and the memoizer of recursive containers), and setting them after the
 * freeze fails the workflow task. Building one container schema here sets
 * both before the freeze. Schemas themselves stay per run: zod defines their
 * methods on first use, which a frozen schema refuses.
 */
import { z } from 'zod';

const warmUp = z.object({ names: z.array(z.string()) });
if (!warmUp.safeParse({ names: [] }).success || !z.config().localeError) {
  throw new Error('zod did not set up its global state before the workflow sandbox froze it');
}
