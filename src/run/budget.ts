/**
 * The budget ceiling (reference 001): cumulative dollar cost against an
 * optional limit, with warnings at 75 %, 80 % and 90 % and a halt at 100 %
 * until someone approves more. Pure, so the workflow owns it and carries it
 * across continue-as-new.
 */
import { plainUsd } from '../api/money.js';

/** Plain JSON form of the budget, carried across continue-as-new. */
export interface BudgetState {
  budgetUsd: number | null;
  spentUsd: number;
  /** Thresholds (fractions, 1 = exhausted) already announced at the current ceiling. */
  warned: number[];
}

/** Warning thresholds of the reference budget ceiling: 75 %, 80 %, 90 %; 100 % pauses the run. */
export const BUDGET_THRESHOLDS = [0.75, 0.8, 0.9] as const;

/** Announcements tracked per ceiling: the warnings, then exhaustion itself. */
const MARKS = [...BUDGET_THRESHOLDS, 1] as const;

/** Float sums of small costs land a hair under round numbers (0.1 + 0.2 …); this absorbs that. */
const EPSILON = 1e-12;

/** Dollars with two decimals, or up to four when cents would hide the amount ($0.0075), or as many as an odd, tiny budget needs. */
function usd(amount: number): string {
  if (amount > 0 && amount < 0.0001) return `$${plainUsd(amount)}`;
  const fine = amount.toFixed(4).replace(/0{1,2}$/, '');
  return `$${fine}`;
}

/** Tracks spend against an optional ceiling and announces each threshold once per ceiling. */
export class Budget {
  private state: BudgetState;

  constructor(budgetUsd: number | null, state?: BudgetState) {
    this.state = state ? { ...state, warned: [...state.warned] } : { budgetUsd, spentUsd: 0, warned: [] };
  }

  get spentUsd(): number {
    return this.state.spentUsd;
  }

  get budgetUsd(): number | null {
    return this.state.budgetUsd;
  }

  /** Spent has reached the ceiling; never true without a budget. */
  get exhausted(): boolean {
    return this.reached(1);
  }

  canSpend(): boolean {
    return !this.exhausted;
  }

  /** Adds a cost; returns the thresholds this add crossed, as warnings, and whether the ceiling is reached. */
  add(costUsd: number): { warnings: string[]; exhausted: boolean } {
    this.state.spentUsd += Math.max(0, costUsd);
    const { budgetUsd, spentUsd, warned } = this.state;
    if (budgetUsd === null) return { warnings: [], exhausted: false };
    const crossed = MARKS.filter((mark) => this.reached(mark) && !warned.includes(mark));
    warned.push(...crossed);
    const warnings = crossed.map((mark) =>
      mark === 1
        ? `budget exhausted (${usd(spentUsd)} of ${usd(budgetUsd)}): paused until approved`
        : `budget ${Math.round(mark * 100)}% used (${usd(spentUsd)} of ${usd(budgetUsd)}${passedBy(mark, spentUsd, budgetUsd)})`,
    );
    return { warnings, exhausted: this.exhausted };
  }

  /** Raises the ceiling; thresholds already passed at the new ceiling stay announced, the others re-arm. */
  approve(addBudgetUsd: number): void {
    // Approving a run that had no ceiling sets one above what it has spent: the approver chose a limit.
    this.state.budgetUsd = (this.state.budgetUsd ?? this.state.spentUsd) + addBudgetUsd;
    this.state.warned = MARKS.filter((mark) => this.reached(mark));
  }

  snapshot(): BudgetState {
    return { ...this.state, warned: [...this.state.warned] };
  }

  private reached(fraction: number): boolean {
    const { budgetUsd, spentUsd } = this.state;
    return budgetUsd !== null && spentUsd >= budgetUsd * fraction - EPSILON;
  }
}

/** A step that jumps past a mark says where it landed: "budget 80% used ($4.73 of $4.00)" alone reads as a contradiction. */
function passedBy(mark: number, spentUsd: number, budgetUsd: number): string {
  const now = Math.floor((100 * spentUsd) / budgetUsd);
  return now >= Math.round(mark * 100) + 5 ? `, now ${now}%` : '';
}
