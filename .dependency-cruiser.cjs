// The boundaries of docs/architecture.md, checked by `npm run lint` and scripts/test.sh.
// Each part lists what it may import; everything else is forbidden. The
// deterministic parts (workflows, run) also may not load Node or I/O modules,
// because the workflow bundle must replay the same way on any machine.

/** The parts of src/ and the parts (and npm modules) each may import. */
const PARTS = {
  api: ['api'],
  run: ['api', 'run'],
  critic: ['api', 'run', 'critic'],
  workflows: ['api', 'run', 'critic', 'workflows', 'activities', 'llm/retry-policy\\.ts'],
  activities: ['api', 'run', 'critic', 'llm', 'tools', 'activities', 'server/temporal-connection\\.ts'],
  llm: ['api', 'llm'],
  tools: ['api', 'tools'],
  scripted: ['scripted'],
  server: ['api', 'server'],
  ops: ['api', 'ops', 'server', 'llm', 'activities', 'tools'],
  client: ['api', 'client', 'ops', 'workflows', 'history', 'server/(temporal-connection|tcp-probe|search-attributes)\\.ts'],
  panel: ['api', 'client', 'ops', 'history', 'panel'],
  history: ['api', 'history'],
  cli: ['api', 'client', 'ops', 'server', 'panel', 'cluster', 'history', 'cli', 'worker\\.ts'],
  cluster: ['api', 'server', 'client', 'panel', 'ops', 'cluster', 'tools/process-tree\\.ts', 'tools/jail-plan\\.ts'],
};

/** npm modules the workflow bundle may load: the SDK's workflow side, its common types, the tracing API and the OpenTelemetry interceptors' workflow side, zod. */
const WORKFLOW_SAFE_MODULES = '^node_modules/(@temporalio/(workflow|common|interceptors-opentelemetry/lib/workflow)|@opentelemetry/api|zod)/';

/** A rule: nothing matching `from` may import anything matching `to`. Every rule is an error. */
const forbid = (name, comment, from, to) => ({ name, comment, severity: 'error', from, to });

const partRules = Object.entries(PARTS).map(([part, allowed]) =>
  forbid(
    `${part}-imports-only-its-neighbours`,
    `src/${part}/ may import only ${allowed.join(', ')} (see docs/architecture.md, "Layout").`,
    { path: `^src/${part}/` },
    { path: '^src/', pathNot: [`^src/(${allowed.join('|')})(/|$)`] },
  ),
);

module.exports = {
  forbidden: [
    ...partRules,
    forbid(
      'worker-is-wiring',
      'src/worker.ts wires activities, workflows and operations together; operator surfaces build on it, not the reverse.',
      { path: '^src/worker\\.ts$' },
      { path: '^src/(cli|panel|client|cluster)/' },
    ),
    forbid('no-circular', 'Modules that import each other cannot be understood, tested or loaded one without the other.', {}, { circular: true }),
    forbid(
      'deterministic-code-loads-no-node',
      'Workflows and src/run replay in the workflow sandbox: no Node APIs, no I/O.',
      { path: '^src/(workflows|run|critic)/' },
      { dependencyTypes: ['core'] },
    ),
    forbid(
      'deterministic-code-loads-only-workflow-safe-modules',
      'The workflow bundle may load only modules that do no I/O and hold no native code.',
      { path: '^src/(workflows|run|critic|api)/' },
      { dependencyTypes: ['npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-no-pkg', 'npm-unknown'], pathNot: WORKFLOW_SAFE_MODULES },
    ),
    forbid(
      'run-and-critic-know-no-temporal',
      'src/run and src/critic are plain state machines and policies, unit-tested without Temporal.',
      { path: '^src/(run|critic)/' },
      { path: '@temporalio/' },
    ),
    forbid(
      'workflows-import-activities-as-types',
      'Activities run on workers, not in the sandbox: workflows reach them through proxyActivities.',
      { path: '^src/workflows/' },
      { path: '^src/activities/', dependencyTypesNot: ['type-only'] },
    ),
    forbid(
      'client-imports-workflows-as-types',
      'The client names workflows by type only; loading them would load the workflow SDK.',
      { path: '^src/client/' },
      { path: '^src/workflows/', dependencyTypesNot: ['type-only'] },
    ),
    forbid(
      'only-worker-verbs-load-the-worker',
      'The client and the CLI never load @temporalio/worker (and its native runtime), except the modules of the verbs that run a worker, which the CLI loads with import() when such a verb runs.',
      { path: '^src/(client|cli)/', pathNot: '^src/cli/(worker-process|local-stack)\\.ts$' },
      { path: ['^src/worker\\.ts$', '@temporalio/worker', '^src/ops/logger\\.ts$'] },
    ),
    forbid(
      'worker-verbs-load-lazily',
      'A module that runs a worker is loaded with import() by the verb that needs it, never statically.',
      { path: '^src/cli/' },
      { path: '^src/cli/(worker-process|local-stack)\\.ts$', dependencyTypesNot: ['dynamic-import', 'type-only'] },
    ),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
