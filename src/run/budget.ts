/** Plain JSON form of the budget, carried across continue-as-new. */
export interface BudgetState {
  budgetUsd: number | null;
  spentUsd: number;
  /** Thresholds (fractions) already announced at the current ceiling. */
  warned: number[];
}

/** Warning thresholds of the reference budget ceiling: 75 %, 80 %, 90 %; 100 % pauses the run. */
export const BUDGET_THRESHOLDS = [0.75, 0.8, 0.9] as const;

/** Tracks spend against an optional ceiling; announces each threshold once per ceiling. */
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

  get exhausted(): boolean {
    return this.state.budgetUsd !== null && this.state.spentUsd >= this.state.budgetUsd - 1e-12;
  }

  canSpend(): boolean {
    return !this.exhausted;
  }

  /** Adds a cost; returns the thresholds it crossed as warnings, and whether the ceiling is reached. */
  add(costUsd: number): { warnings: string[]; exhausted: boolean } {
    this.state.spentUsd += Math.max(0, costUsd);
    const { budgetUsd, spentUsd } = this.state;
    if (budgetUsd === null) return { warnings: [], exhausted: false };
    const warnings: string[] = [];
    for (const threshold of BUDGET_THRESHOLDS) {
      if (spentUsd >= budgetUsd * threshold && !this.state.warned.includes(threshold)) {
        this.state.warned.push(threshold);
        warnings.push(`budget ${Math.round(threshold * 100)}% used ($${spentUsd.toFixed(4)} of $${budgetUsd.toFixed(2)})`);
      }
    }
    if (this.exhausted) warnings.push(`budget exhausted ($${spentUsd.toFixed(4)} of $${budgetUsd.toFixed(2)}): paused until approved`);
    return { warnings, exhausted: this.exhausted };
  }

  /** Raises the ceiling; thresholds already passed at the new ceiling stay announced, the others re-arm. */
  approve(addBudgetUsd: number): void {
    const budgetUsd = (this.state.budgetUsd ?? this.state.spentUsd) + addBudgetUsd;
    this.state.budgetUsd = budgetUsd;
    this.state.warned = BUDGET_THRESHOLDS.filter((t) => this.state.spentUsd >= budgetUsd * t);
  }

  snapshot(): BudgetState {
    return { ...this.state, warned: [...this.state.warned] };
  }
}
