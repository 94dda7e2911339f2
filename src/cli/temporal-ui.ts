/** The Temporal UI's list filter for Tether runs: critic and fleet workflows would crowd it otherwise. */
export const RUNS_QUERY = "WorkflowType = 'agentRun'";

/** The Temporal UI's list of runs, filtered to `agentRun` (docs/operations.md describes the saved view with Tether's columns). */
export function runsListUrl(uiUrl: string, namespace: string): string {
  return `${uiUrl.replace(/\/+$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows?query=${encodeURIComponent(RUNS_QUERY)}`;
}

/** One run's page (its history) in the Temporal UI. */
export function runUrl(uiUrl: string, namespace: string, runId: string): string {
  return `${uiUrl.replace(/\/+$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(runId)}`;
}
