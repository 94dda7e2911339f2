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
  activities: ['api', 'run', 'critic', 'llm', 'tools', 'activities'],
  llm: ['api', 'llm'],
  tools: ['api', 'tools'],
  scripted: ['scripted'],
  server: ['api', 'server'],
  ops: ['api', 'ops', 'server', 'llm', 'activities', 'tools'],
  client: ['api', 'client', 'ops', 'workflows'],
  panel: ['api', 'client', 'ops', 'history', 'panel'],
  history: ['api', 'history'],
  cli: ['api', 'client', 'ops', 'server', 'panel', 'cluster', 'history', 'cli', 'worker\\.ts'],
  cluster: ['api', 'server', 'client', 'panel', 'ops', 'cluster', 'tools/process-tree\\.ts'],
};

/** npm modules the workflow bundle may load: the SDK's workflow side, its common types, the tracing API, zod. */
const WORKFLOW_SAFE_MODULES = '^node_modules/(@temporalio/(workflow|common)|@opentelemetry/api|zod)/';

const partRules = Object.entries(PARTS).map(([part, allowed]) => ({
  name: `${part}-imports-only-its-neighbours`,
  comment: `src/${part}/ may import only ${allowed.join(', ')} (see docs/architecture.md, "Layout").`,
  severity: 'error',
  from: { path: `^src/${part}/` },
  to: { path: '^src/', pathNot: [`^src/(${allowed.join('|')})(/|$)`] },
}));

module.exports = {
  forbidden: [
    ...partRules,
    {
      name: 'worker-is-wiring',
      comment: 'src/worker.ts wires activities, workflows and operations together; operator surfaces build on it, not the reverse.',
      severity: 'error',
      from: { path: '^src/worker\\.ts$' },
      to: { path: '^src/(cli|panel|client|cluster)/' },
    },
    {
      name: 'no-circular',
      comment: 'Modules that import each other cannot be understood, tested or loaded one without the other.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'deterministic-code-loads-no-node',
      comment: 'Workflows and src/run replay in the workflow sandbox: no Node APIs, no I/O.',
      severity: 'error',
      from: { path: '^src/(workflows|run|critic)/' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'deterministic-code-loads-only-workflow-safe-modules',
      comment: 'The workflow bundle may load only modules that do no I/O and hold no native code.',
      severity: 'error',
      from: { path: '^src/(workflows|run|critic|api)/' },
      to: { dependencyTypes: ['npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-no-pkg', 'npm-unknown'], pathNot: WORKFLOW_SAFE_MODULES },
    },
    {
      name: 'run-and-critic-know-no-temporal',
      comment: 'src/run and src/critic are plain state machines and policies, unit-tested without Temporal.',
      severity: 'error',
      from: { path: '^src/(run|critic)/' },
      to: { path: '@temporalio/' },
    },
    {
      name: 'workflows-import-activities-as-types',
      comment: 'Activities run on workers, not in the sandbox: workflows reach them through proxyActivities.',
      severity: 'error',
      from: { path: '^src/workflows/' },
      to: { path: '^src/activities/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'client-imports-workflows-as-types',
      comment: 'The client names workflows by type only; loading them would load the workflow SDK.',
      severity: 'error',
      from: { path: '^src/client/' },
      to: { path: '^src/workflows/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'only-worker-verbs-load-the-worker',
      comment:
        'The client and the CLI never load @temporalio/worker (and its native runtime), except the modules of the verbs that run a worker, which the CLI loads with import() when such a verb runs.',
      severity: 'error',
      from: { path: '^src/(client|cli)/', pathNot: '^src/cli/(worker-process|local-stack)\\.ts$' },
      to: { path: ['^src/worker\\.ts$', '@temporalio/worker', '^src/ops/logger\\.ts$'] },
    },
    {
      name: 'worker-verbs-load-lazily',
      comment: 'A module that runs a worker is loaded with import() by the verb that needs it, never statically.',
      severity: 'error',
      from: { path: '^src/cli/' },
      to: { path: '^src/cli/(worker-process|local-stack)\\.ts$', dependencyTypesNot: ['dynamic-import', 'type-only'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
