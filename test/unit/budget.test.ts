import { describe, expect, it } from 'vitest';
import { Budget } from '../../src/run/budget.js';

/** Adds each cost in turn and returns the warnings of each add. */
function spend(budget: Budget, ...costs: number[]): string[][] {
  return costs.map((c) => budget.add(c).warnings);
}

describe('the budget', () => {
  it('warns once at 75 %, with what is spent of what is allowed', () => {
    const budget = new Budget(1);
    expect(spend(budget, 0.5, 0.25, 0.01)).toEqual([[], ['budget 75% used ($0.75 of $1.00)'], []]);
  });

  it('warns once each at 80 % and 90 %', () => {
    const budget = new Budget(1);
    const warnings = spend(budget, 0.76, 0.04, 0.01, 0.09, 0.05);
    expect(warnings).toEqual([['budget 75% used ($0.76 of $1.00)'], ['budget 80% used ($0.80 of $1.00)'], [], ['budget 90% used ($0.90 of $1.00)'], []]);
  });

  it('announces every threshold one add crosses, in order', () => {
    expect(new Budget(1).add(0.95).warnings).toEqual([
      'budget 75% used ($0.95 of $1.00, now 95%)',
      'budget 80% used ($0.95 of $1.00, now 95%)',
      'budget 90% used ($0.95 of $1.00, now 95%)',
    ]);
  });

  it('is exhausted at exactly 100 %, not before', () => {
    const budget = new Budget(1);
    expect(budget.add(0.99)).toMatchObject({ exhausted: false });
    expect(budget.canSpend()).toBe(true);
    expect(budget.add(0.01)).toEqual({ exhausted: true, warnings: ['budget exhausted ($1.00 of $1.00): paused until approved'] });
    expect(budget.exhausted).toBe(true);
    expect(budget.canSpend()).toBe(false);
  });

  it('announces exhaustion once, however much more is added', () => {
    const budget = new Budget(1);
    budget.add(1);
    expect(budget.add(0.2)).toEqual({ warnings: [], exhausted: true });
    expect(budget.spentUsd).toBeCloseTo(1.2);
  });

  it('is not fooled by float sums that land a hair under the ceiling', () => {
    const budget = new Budget(0.3);
    spend(budget, 0.1, 0.1, 0.1);
    expect(budget.exhausted).toBe(true);
  });

  it('shows small amounts to four decimals', () => {
    expect(new Budget(0.01).add(0.0075).warnings).toEqual(['budget 75% used ($0.0075 of $0.01)']);
  });

  it('ignores negative costs', () => {
    const budget = new Budget(1);
    budget.add(-5);
    expect(budget.spentUsd).toBe(0);
  });

  it('never limits or warns a run without a budget', () => {
    const budget = new Budget(null);
    expect(budget.add(1_000)).toEqual({ warnings: [], exhausted: false });
    expect(budget.exhausted).toBe(false);
    expect(budget.canSpend()).toBe(true);
    expect(budget.budgetUsd).toBeNull();
    expect(budget.spentUsd).toBe(1_000);
  });

  it('raises the ceiling on approval and re-arms the thresholds not yet passed at the new ceiling', () => {
    const budget = new Budget(1);
    spend(budget, 1);
    budget.approve(1);
    expect(budget.budgetUsd).toBe(2);
    expect(budget.exhausted).toBe(false);
    expect(spend(budget, 0.5, 0.1, 0.2, 0.2)).toEqual([
      ['budget 75% used ($1.50 of $2.00)'],
      ['budget 80% used ($1.60 of $2.00)'],
      ['budget 90% used ($1.80 of $2.00)'],
      ['budget exhausted ($2.00 of $2.00): paused until approved'],
    ]);
  });

  it('does not re-announce thresholds already passed at the new ceiling', () => {
    const budget = new Budget(1);
    spend(budget, 1);
    budget.approve(0.2);
    expect(budget.add(0.01).warnings).toEqual([]);
    expect(budget.add(0.09).warnings).toEqual(['budget 90% used ($1.10 of $1.20)']);
  });

  it('keeps its spend and announced thresholds across a snapshot and restore', () => {
    const budget = new Budget(1);
    spend(budget, 0.8);
    const restored = new Budget(1, JSON.parse(JSON.stringify(budget.snapshot())));
    expect(restored.spentUsd).toBe(0.8);
    expect(restored.add(0.1).warnings).toEqual(['budget 90% used ($0.90 of $1.00)']);
    expect(budget.snapshot()).toEqual({ budgetUsd: 1, spentUsd: 0.8, warned: [0.75, 0.8] });
  });
});
