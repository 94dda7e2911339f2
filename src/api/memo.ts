/**
 * The memo field a run leaves its status in as it ends. A closed run's full
 * status (audit trail, critic, warnings, last tool) is then one describe away,
 * where the status query would need a worker to replay the whole run.
 */
export const FINAL_STATUS_MEMO = 'finalStatus';

/** The memo field lists read a run's goal from, and how much of the goal it keeps (the whole goal is in the run's input). */
export const GOAL_MEMO = 'goal';
export const MEMO_GOAL_CHARS = 200;
