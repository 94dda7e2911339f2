import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { controlPayloadArbitrary, runSpecArbitrary } from '../../bench/chaos/scenarios/fuzz-inputs.js';
import { SHARED_SCHEMA_MODULES } from '../../src/workflows/shared-libraries.js';

/** What the SDK does to every module the workflows share (reusable-vm.ts, `deepFreeze`): freezes it, and all it holds, through its own properties. */
function deepFreeze(object: unknown, seen = new WeakSet<object>()): void {
  if (object === null || (typeof object !== 'object' && typeof object !== 'function') || seen.has(object)) return;
  seen.add(object);
  if (typeof object === 'object') {
    for (const key of Reflect.ownKeys(object)) {
      try {
        deepFreeze((object as Record<PropertyKey, unknown>)[key], seen);
      } catch {
        // as the SDK: some objects cannot be frozen
      }
    }
  }
  Object.freeze(object);
}

/** Every zod schema the shared modules export, by name. */
const schemas = SHARED_SCHEMA_MODULES.flatMap((module) =>
  Object.entries(module).filter((entry): entry is [string, { safeParse(v: unknown): { success: boolean } }] => {
    const value = entry[1] as { _zod?: unknown; safeParse?: unknown } | null;
    return typeof value === 'object' && value !== null && '_zod' in value && typeof value.safeParse === 'function';
  }),
);

describe('schemas shared frozen between workflows', () => {
  it('parse anything, valid or not, after the freeze the workflow sandbox applies: an answer, never a TypeError', () => {
    for (const module of SHARED_SCHEMA_MODULES) deepFreeze(module);
    expect(schemas.length).toBeGreaterThan(10);
    fc.assert(
      fc.property(fc.anything({ withObjectString: true, withNullPrototype: true, withBigInt: true, withDate: true, withMap: true, withSet: true }), (input) => {
        for (const [, schema] of schemas) expect(typeof schema.safeParse(input).success).toBe('boolean');
      }),
      { numRuns: 300 },
    );
    // The chaos fuzz's inputs: valid RunSpecs and control payloads and their near-misses, which reach the nested schemas.
    const inputs = fc.oneof(runSpecArbitrary('/tmp/tether-shared-schemas'), controlPayloadArbitrary);
    fc.assert(
      fc.property(inputs, (input) => {
        for (const [, schema] of schemas) expect(typeof schema.safeParse(input).success).toBe('boolean');
      }),
      { numRuns: 500 },
    );
  });
});
