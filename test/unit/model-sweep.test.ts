import { describe, expect, it } from 'vitest';
import { ModelSweep } from '../../src/run/model-sweep.js';

describe("a pass over the run's models that got no reply", () => {
  it('counts a failed step when any model failed after its retries, even with other circuits open', () => {
    const sweep = new ModelSweep();
    sweep.circuitOpen(5_000, 'openai open');
    sweep.failed('anthropic:claude', '503 after 5 attempts');
    expect(sweep.verdict()).toEqual({ kind: 'count_failure', error: 'LLM call failed after retries: anthropic:claude: 503 after 5 attempts' });
  });

  it('waits out the shortest open circuit, never less than a second, and says which were open', () => {
    const sweep = new ModelSweep();
    sweep.circuitOpen(8_000, 'openai open');
    sweep.circuitOpen(3_000, 'anthropic open');
    expect(sweep.verdict()).toMatchObject({ kind: 'wait', ms: 3_000, why: 'openai open; anthropic open' });
    // Two models of one provider share its circuit: its failure is said once.
    const shared = new ModelSweep();
    shared.circuitOpen(5_000, 'ollama open for 119 s more');
    shared.circuitOpen(5_000, 'ollama open for 119 s more');
    expect(shared.verdict()).toMatchObject({ why: 'ollama open for 119 s more' });
    const soon = new ModelSweep();
    soon.circuitOpen(20, 'about to close');
    expect(soon.verdict()).toMatchObject({ kind: 'wait', ms: 1_000 });
    const long = new ModelSweep();
    long.circuitOpen(1_000, 'x'.repeat(3_000));
    const verdict = long.verdict();
    expect(verdict.kind === 'wait' && [verdict.why.length, verdict.asFailure.length]).toEqual([1_000, 1_000]);
  });

  it('ends the run when every model overflowed and compaction could not help, naming each', () => {
    const sweep = new ModelSweep();
    sweep.overflowed('openai:gpt-4o', 'context too long', 'compaction failed: 500');
    sweep.overflowed('openai:gpt-4o-mini', 'context too long', 'compaction already ran for this call');
    expect(sweep.verdict()).toEqual({
      kind: 'end',
      cause:
        'the context is too long for the model, and compaction did not make it fit (openai:gpt-4o: context too long; compaction failed: 500; openai:gpt-4o-mini: context too long; compaction already ran for this call)',
    });
  });

  it('waits rather than ends when a provider whose circuit is open may take the context, and counts an overflow as old runs did', () => {
    const sweep = new ModelSweep();
    sweep.overflowed('openai:gpt-4o', 'context too long', 'nothing older is left to summarise');
    sweep.circuitOpen(2_000, 'anthropic open');
    expect(sweep.verdict()).toMatchObject({ kind: 'wait', ms: 2_000 });
    const recorded = new ModelSweep();
    recorded.overflowCountedAsFailure();
    expect(recorded.verdict()).toEqual({ kind: 'count_failure', error: 'LLM call failed after retries: context overflow, and compaction did not help' });
  });
});
