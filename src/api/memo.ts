/**
 * The memo field a run leaves its status in as it ends. A closed run's full
 * status (audit trail, critic, warnings, last tool) is then one describe away,
 * where the status query would need a worker to replay the whole run.
 */
export const FINAL_STATUS_MEMO = 'finalStatus';
