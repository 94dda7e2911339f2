/**
 * The generators of the fuzz scenario: RunSpecs a careless or hostile caller
 * might write, and control payloads sent raw. Values stay safe to run: a
 * workspace is always under the suite's scratch directory and a verify
 * command is one of a few harmless ones.
 */
import fc from 'fast-check';

/** An object with an own `__proto__` key, as JSON.parse makes it (an object literal would set the prototype). */
const protoKey = (inner: unknown) => JSON.parse(`{"__proto__": ${JSON.stringify(inner)}}`);

const garbage = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.constant(''),
  fc.constant('x'.repeat(300_000)),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }),
  fc.jsonValue({ maxDepth: 2 }).map(protoKey),
);

const duration = fc.oneof(
  fc.constantFrom('1s', '5m', '2h', '30d', '-1s', '0s', '99999999d', '1.5h', 'forever', '', ' 5m '),
  fc.integer({ min: -1e12, max: 1e15 }),
  fc.double(),
  garbage,
);

const model = fc.oneof(
  fc.constantFrom('scripted:fuzz-ok', 'scripted:no-such-script', 'openai:gpt-fuzz', 'anthropic:claude-fuzz', 'nope:model', 'scripted:'),
  garbage,
);

const limits = fc.record(
  {
    maxSteps: fc.oneof(fc.integer({ min: -5, max: 2_000_000 }), garbage),
    maxRuntime: duration,
    maxConsecutiveErrors: fc.oneof(fc.integer({ min: -1, max: 2_000 }), garbage),
    budgetUsd: fc.oneof(fc.double({ min: -10, max: 2e6, noNaN: true }), garbage),
    toolTimeout: duration,
    maxPause: duration,
    llmTimeout: duration,
    maxContextChars: fc.oneof(fc.integer({ min: 0, max: 60_000_000 }), garbage),
    maxHistoryEvents: fc.oneof(fc.integer({ min: 0, max: 60_000 }), garbage),
  },
  { requiredKeys: [] },
);

const verify = fc.oneof(
  fc.record(
    { command: fc.constantFrom('true', 'false', '', '   ', 'test -f x'), maxAttempts: fc.oneof(fc.integer({ min: -1, max: 200 }), garbage) },
    { requiredKeys: ['command'] },
  ),
  garbage,
);

const critic = fc.oneof(
  fc.record(
    {
      policy: fc.oneof(fc.constantFrom('extend-once', 'llm', 'off', 'yes'), garbage),
      softTimeout: duration,
      backstopMultiplier: fc.oneof(fc.double(), garbage),
      model,
    },
    { requiredKeys: [] },
  ),
  garbage,
);

const sandbox = fc.oneof(
  fc.record(
    {
      mode: fc.oneof(fc.constantFrom('bwrap', 'off', 'docker'), garbage),
      network: fc.oneof(fc.boolean(), garbage),
      memoryMb: fc.oneof(fc.integer({ min: 0, max: 2_000_000 }), garbage),
    },
    { requiredKeys: [] },
  ),
  garbage,
);

/** Every field of a RunSpec sometimes wrong, plus an `extra` to become an unknown key. */
function carelessSpec(workspaceRoot: string) {
  return fc.record(
    {
      goal: fc.oneof(fc.string({ minLength: 1 }), fc.string({ unit: 'grapheme' }), fc.constant('   '), fc.constant('g'.repeat(250_000)), garbage),
      model,
      fallbackModels: fc.oneof(fc.array(model, { maxLength: 12 }), garbage),
      tools: fc.oneof(
        fc.array(fc.oneof(fc.constantFrom('shell', 'read_file', 'write_file', 'finish', 'ask_user', 'delegate'), fc.string()), { maxLength: 8 }),
        garbage,
      ),
      workspace: fc.oneof(
        fc.string({ minLength: 1, maxLength: 30 }).map((s) => `${workspaceRoot}/${s.replace(/[^\w.-]/g, '_')}`),
        garbage,
      ),
      system: fc.oneof(fc.string(), fc.constant('s'.repeat(250_000)), garbage),
      limits: fc.oneof(limits, garbage),
      verify,
      critic,
      sandbox,
      extra: garbage,
    },
    { requiredKeys: [] },
  );
}

// Specs a careful caller writes, with unicode and edge values: without them almost nothing generated is valid.
const plausibleSpec = fc.record(
  {
    goal: fc
      .oneof(fc.string({ minLength: 1, maxLength: 200 }), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 50 }))
      .filter((g) => g.trim().length > 0),
    model: fc.constantFrom('scripted:fuzz-ok', 'scripted:no-such-script', 'openai:gpt-fuzz'),
    tools: fc.subarray(['shell', 'read_file', 'write_file', 'finish']),
    system: fc.string({ unit: 'grapheme', maxLength: 100 }),
    limits: fc.record(
      {
        maxSteps: fc.integer({ min: 1, max: 1_000_000 }),
        maxRuntime: fc.constantFrom('1s', '5m', '2h', '365d'),
        llmTimeout: fc.constantFrom('500ms', '30s', '1d'),
      },
      { requiredKeys: [] },
    ),
    critic: fc.record({ policy: fc.constantFrom('off', 'extend-once'), softTimeout: fc.constantFrom('100ms', '2m') }, { requiredKeys: [] }),
  },
  { requiredKeys: ['goal', 'model'] },
);

/** A RunSpec: mostly plausible, every field sometimes wrong, sometimes with extra or `__proto__` keys. */
export function runSpecArbitrary(workspaceRoot: string): fc.Arbitrary<unknown> {
  const spec = carelessSpec(workspaceRoot);
  return fc.oneof(
    { weight: 4, arbitrary: plausibleSpec },
    { weight: 8, arbitrary: spec.map(({ extra, ...rest }) => (extra === undefined ? rest : { ...rest, [`x-${typeof extra}`]: extra })) },
    { weight: 1, arbitrary: spec.map((s) => ({ ...protoKey({ polluted: true }), ...s })) },
    { weight: 1, arbitrary: garbage },
  );
}

/** A control payload: anything JSON can carry, near-misses of each message, and oversized strings. */
export const controlPayloadArbitrary: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  garbage,
  fc.record({ message: fc.oneof(fc.string(), fc.constant('m'.repeat(600_000)), garbage) }, { requiredKeys: [] }),
  fc.record({ by: duration, steps: fc.oneof(fc.integer({ min: -10, max: 2_000_000 }), garbage) }, { requiredKeys: [] }),
  fc.record({ reason: garbage }, { requiredKeys: [] }),
  fc.record({ addBudgetUsd: fc.oneof(fc.double(), garbage) }, { requiredKeys: [] }),
  fc.record({ text: fc.oneof(fc.string(), fc.constant('t'.repeat(200_000)), garbage) }, { requiredKeys: [] }),
  fc.jsonValue({ maxDepth: 2 }).map(protoKey),
);

export const CONTROL_MESSAGE_NAMES = ['steer', 'extend', 'kill', 'emergencyStop', 'clearEmergency', 'approve', 'answer', 'bogus', 'status'];
