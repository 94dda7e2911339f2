// The panel's client: hash routes, the JSON API with the token in a header,
// and a fetch()-read event stream (EventSource cannot send the header).

const view = document.getElementById('view');
const flash = document.getElementById('flash');
let closeStream = () => {};
let config = { temporalUiUrl: 'http://localhost:8233', namespace: 'default' };

function token() {
  const fromHash = /token=([^&]+)/.exec(location.hash);
  if (fromHash) {
    sessionStorage.setItem('tether-token', decodeURIComponent(fromHash[1]));
    history.replaceState(null, '', '#/');
  }
  return sessionStorage.getItem('tether-token');
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  return node;
}

function say(message, isError = false) {
  flash.textContent = message;
  flash.className = isError ? 'error' : '';
}

/** Whether `input` holds text; when not, says `message` and puts the cursor there. */
function filled(input, message) {
  if (input.value.trim()) return true;
  say(message, true);
  input.focus();
  return false;
}

async function api(path, body) {
  const response = await fetch(path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${token()}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({}));
  if (response.status === 401) refused();
  if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
  return data;
}

/** Reads Server-Sent Events through fetch so the token travels in a header; reconnects, later when the panel is busy. */
function stream(path, onEvent) {
  const controller = new AbortController();
  (async () => {
    while (!controller.signal.aborted) {
      let delay = 1000;
      try {
        const response = await fetch(path, { headers: { authorization: `Bearer ${token()}` }, signal: controller.signal });
        if (response.status === 401) {
          refused();
          return;
        }
        // No such run: asking again every second would find none either (the page already says so).
        if (response.status === 404) return;
        if (!response.ok || !response.body) {
          const data = await response.json().catch(() => ({}));
          delay = Math.max(1, Number(response.headers.get('retry-after')) || 1) * 1000;
          throw new Error(data.error || `HTTP ${response.status}`);
        }
        await readEvents(response.body, onEvent);
      } catch (err) {
        if (controller.signal.aborted) return;
        if (delay > 1000) say(err.message, true);
      }
      await new Promise((r) => setTimeout(r, delay));
    }
  })();
  return () => controller.abort();
}

async function readEvents(body, onEvent) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const event = /^event: (.*)$/m.exec(frame)?.[1];
      const data = /^data: (.*)$/m.exec(frame)?.[1];
      if (event && data) onEvent(event, JSON.parse(data));
    }
  }
}

function age(iso) {
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  return s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m` : s < 86400 ? `${Math.floor(s / 3600)}h` : `${Math.floor(s / 86400)}d`;
}
/** The Temporal UI's list of runs only: critic and fleet workflows would crowd it (README, "The Temporal UI"). */
const runsListUrl = () =>
  `${config.temporalUiUrl}/namespaces/${encodeURIComponent(config.namespace)}/workflows?query=${encodeURIComponent("WorkflowType = 'agentRun'")}`;
const usd = (v) => (v === null || v === undefined ? '-' : `$${Number(v).toFixed(4)}`);
const stateCell = (state) => el('span', { class: `state state-${state}` }, state);

// ---------- runs list ----------

const STATES = [
  '',
  'running',
  'emergency_stopped',
  'awaiting_approval',
  'blocked',
  'awaiting_tool_approval',
  'completed',
  'failed',
  'killed',
  'timeout',
  'cancelled',
  'stuck',
  'needs_fix',
];

function showList() {
  const filterState = el(
    'select',
    { id: 'filter-state' },
    STATES.map((s) => el('option', { value: s }, s || 'any state')),
  );
  const filterStop = el('input', { type: 'checkbox', id: 'filter-estop' });
  const body = el('tbody');
  const render = (runs) => {
    body.replaceChildren();
    const rows = (runs.runs || []).filter((r) => (!filterState.value || r.state === filterState.value) && (!filterStop.checked || r.emergencyStop));
    if (runs.error) body.append(el('tr', {}, el('td', { colspan: 7, class: 'error' }, runs.error)));
    for (const r of rows) body.append(runRow(r));
  };
  let latest = { runs: [] };
  filterState.addEventListener('change', () => render(latest));
  filterStop.addEventListener('change', () => render(latest));
  view.replaceChildren(
    el('h1', {}, 'Runs'),
    el('p', {}, el('a', { href: runsListUrl(), target: '_blank', rel: 'noopener', id: 'temporal-runs' }, 'All runs in the Temporal UI')),
    el(
      'div',
      { class: 'filters' },
      el('label', { for: 'filter-state' }, 'State ', filterState),
      el('label', { for: 'filter-estop' }, filterStop, ' emergency-stopped only'),
    ),
    runsTable(body),
    newRunForm(),
  );
  closeStream = stream('/api/events', (event, data) => {
    if (event === 'runs') {
      latest = data;
      render(data);
    }
  });
}

/** The table of runs, its rows in `body`. */
function runsTable(body) {
  return el(
    'table',
    { id: 'runs' },
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        ['Run (goal and id)', 'State', 'Steps', 'Cost', 'Model', 'E-stop', 'Age'].map((h) => el('th', { scope: 'col' }, h)),
      ),
    ),
    body,
  );
}

/** One run's row in the table: its goal (a link to its page) and id, state, steps, cost, model, emergency stop and age. */
function runRow(r) {
  return el(
    'tr',
    { 'data-run': r.runId },
    el(
      'td',
      { class: 'run-cell' },
      el('a', { href: `#/runs/${encodeURIComponent(r.runId)}`, class: 'goal' }, r.goal || r.runId),
      r.goal ? el('span', { class: 'run-id' }, r.runId) : null,
    ),
    el('td', {}, stateCell(r.state)),
    el('td', {}, String(r.steps)),
    el('td', {}, usd(r.costUsd)),
    el('td', {}, r.model),
    el('td', {}, r.emergencyStop ? el('span', { class: 'estop' }, 'STOP') : ''),
    el('td', {}, age(r.startedAt)),
  );
}

function newRunForm() {
  const field = (id, label, input) => [el('label', { for: id }, label), input];
  const goal = el('textarea', { id: 'new-goal', rows: 3, required: true });
  const model = el('input', { id: 'new-model', value: 'scripted:demo', required: true });
  const tools = el('input', { id: 'new-tools', value: 'shell,read_file,write_file,finish' });
  const maxSteps = el('input', { id: 'new-max-steps', type: 'number', min: 1, value: 50 });
  const maxRuntime = el('input', { id: 'new-max-runtime', value: '30m' });
  const budget = el('input', { id: 'new-budget', type: 'number', min: 0, step: 'any' });
  const workspace = el('input', { id: 'new-workspace', placeholder: 'absolute path on the worker; empty: a fresh directory' });
  const verify = el('input', { id: 'new-verify', placeholder: 'e.g. npm test; empty: no verification' });
  const result = el('p', { id: 'new-result', role: 'status' });
  const form = el(
    'form',
    { class: 'stack', id: 'new-run' },
    el('h2', {}, 'Start a run'),
    field('new-goal', 'Goal', goal),
    field('new-model', 'Model (provider:name)', model),
    field('new-tools', 'Tools (comma-separated)', tools),
    field('new-max-steps', 'Max steps', maxSteps),
    field('new-max-runtime', 'Max runtime', maxRuntime),
    field('new-budget', 'Budget (USD, optional)', budget),
    field('new-workspace', 'Workspace (optional)', workspace),
    field('new-verify', 'Verification command (optional)', verify),
    el('button', { type: 'submit', class: 'primary' }, 'Start'),
    result,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const limits = { maxSteps: Number(maxSteps.value), maxRuntime: maxRuntime.value };
    if (budget.value) limits.budgetUsd = Number(budget.value);
    try {
      const { runId } = await api('/api/runs', {
        goal: goal.value,
        model: model.value,
        tools: tools.value
          .split(',')
          .map((t) => t.trim())
          .filter(Boolean),
        limits,
        ...(workspace.value.trim() ? { workspace: workspace.value.trim() } : {}),
        ...(verify.value.trim() ? { verify: { command: verify.value.trim() } } : {}),
      });
      location.hash = `#/runs/${encodeURIComponent(runId)}`;
    } catch (err) {
      result.textContent = err.message;
      result.className = 'error';
    }
  });
  return form;
}

// ---------- one run ----------

/** The page of one run, put in the view: its sections in order, returned for the run's events to fill. */
function runPage(runId) {
  const page = {
    status: el('dl', { class: 'grid', id: 'status' }),
    warnings: el('p', { class: 'warnings', id: 'warnings' }),
    resultBox: el('div', { id: 'result' }),
    transcript: el('div', { id: 'transcript' }),
    // Why an ended run's transcript is missing: no worker to replay the run.
    transcriptNote: el('p', { id: 'transcript-unavailable', class: 'hint' }),
    forks: el('p', { id: 'forks' }),
    audit: el('ol', { id: 'audit', class: 'audit' }),
    actions: runActions(runId),
    timeline: timelineView(runId),
    live: liveTokensView(runId),
  };
  view.replaceChildren(
    el('p', {}, el('a', { href: '#/' }, '← all runs')),
    el('h1', {}, runId),
    el(
      'p',
      {},
      el(
        'a',
        {
          href: `${config.temporalUiUrl}/namespaces/${encodeURIComponent(config.namespace)}/workflows/${encodeURIComponent(runId)}`,
          target: '_blank',
          rel: 'noopener',
        },
        'History in the Temporal UI',
      ),
    ),
    page.status,
    page.warnings,
    page.actions.node,
    page.resultBox,
    page.forks,
    ...page.live.nodes,
    ...page.timeline.nodes,
    el('h2', {}, 'Audit'),
    page.audit,
    el('h2', {}, 'Transcript'),
    page.transcriptNote,
    page.transcript,
  );
  return page;
}

/** One run's page, kept up to date from the run's events until the view changes. */
function showRun(runId) {
  const { status, warnings, resultBox, transcript, transcriptNote, forks, audit, actions, timeline, live } = runPage(runId);
  // The latest status: a transcript's steps are numbered back from its step (compaction drops the earliest).
  let latest = null;
  // The goal is step 0 however much compaction dropped since; a reply's step is counted back from the latest.
  const forkFrom = (message, step) => forkForm(runId, message, () => step ?? (latest && latest.step - assistantsAfter(transcript, message)));
  let deadline = null;
  let ended = false;
  const countdown = setInterval(() => {
    const node = document.getElementById('deadline-left');
    if (node && deadline && !ended) node.textContent = formatLeft(Date.parse(deadline) - Date.now());
  }, 1000);
  const stop = stream(`/api/events?run=${encodeURIComponent(runId)}`, (event, data) => {
    // A transcript arrives as deltas: the messages from `from` on; `from` 0 replaces it (a new stream, or compaction).
    if (event === 'transcript') return renderTranscript(transcript, data, forkFrom);
    if (event !== 'run') return;
    if (data.error) {
      // No status yet (an unknown run, a server that is away): no control can be sent, so none is offered.
      if (!latest) actions.unavailable(data.error);
      return say(data.error, true);
    }
    latest = data.status;
    transcriptNote.textContent = data.transcriptError || '';
    deadline = data.status.deadline;
    renderStatus(status, data.status);
    renderAudit(audit, data.status.audit || []);
    warnings.textContent = data.status.warnings.length ? `Warnings: ${data.status.warnings.join('; ')}` : '';
    actions.update(data.status);
    timeline.refresh();
    if (TERMINAL.includes(data.status.state) && !ended) {
      ended = true;
      live.stop();
      showResult(resultBox, runId);
    } else if (!ended && data.status.cause) resultBox.replaceChildren(el('p', {}, el('strong', {}, 'Cause: '), data.status.cause));
  });
  closeStream = () => {
    stop();
    live.stop();
    clearInterval(countdown);
  };
  showForks(forks, runId);
}

/**
 * The model call's text as the worker streams it (GET /api/runs/:id/tokens):
 * the current step's reply grows in place; a lost worker shows its notice and
 * the retried call's text replaces the lost one.
 */
function liveTokensView(runId) {
  const head = el('p', { id: 'live-tokens-state', class: 'hint' }, 'No model call is streaming.');
  const text = el('pre', { id: 'live-tokens', class: 'live-tokens' });
  const notices = el('ul', { id: 'live-tokens-notices', class: 'warnings' });
  let current = '';
  let noticesOf = null;
  const stop = stream(`/api/runs/${encodeURIComponent(runId)}/tokens`, (event, data) => {
    // The run has ended: no call will stream again, so the page stops asking.
    if (event === 'ended') {
      stop();
      if (!current) head.textContent = 'The run has ended; no model call streams.';
      return;
    }
    const key = `${data.step}/${data.attempt}`;
    // A notice is about its step's call (a lost worker, dropped text): a later step's stream makes it old news.
    if (noticesOf !== null && data.step !== noticesOf) {
      notices.replaceChildren();
      noticesOf = null;
    }
    if (event === 'token') {
      if (key !== current) {
        current = key;
        text.textContent = '';
        head.textContent = `Step ${data.step}${data.attempt > 1 ? `, attempt ${data.attempt}` : ''}: streaming…`;
      }
      text.append(data.text);
    } else if (event === 'token_end') {
      head.textContent = `Step ${data.step}: ${data.ok ? 'reply complete' : 'the call failed'}.`;
      // The next call's text replaces this one's, though it may have the same step and attempt (asked again after a stop).
      current = '';
    } else if (event === 'token_interrupted' || event === 'token_notice') {
      notices.append(el('li', {}, data.message));
      noticesOf = data.step;
    }
  });
  return { nodes: [el('h2', {}, 'Live tokens'), head, text, notices], stop };
}

/** The run's forks, found by the TetherForkOf search attribute (eventually consistent, so read once on opening). */
/**
 * The waterfall and the cost curve (charts.js), refreshed whenever the run's
 * status event arrives: one request at a time, and one more after it when
 * events came meanwhile, so a fast run cannot pile requests up.
 */
function timelineView(runId) {
  const waterfall = el('div', { id: 'timeline' });
  const details = el('div', { id: 'span-details', class: 'span-details', 'aria-live': 'polite' }, 'Hover over or focus a span to see its details.');
  const cost = el('div', { id: 'cost' });
  let busy = false;
  let again = false;
  async function refresh() {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      const data = await api(`/api/runs/${encodeURIComponent(runId)}/timeline`);
      const focused = document.activeElement?.getAttribute?.('data-key');
      TetherCharts.drawWaterfall(waterfall, details, data);
      TetherCharts.drawCostCurve(cost, data.curve, data.budgetUsd);
      if (focused) [...waterfall.querySelectorAll('g.span')].find((g) => g.getAttribute('data-key') === focused)?.focus();
    } catch (err) {
      waterfall.replaceChildren(el('p', { class: 'error' }, `Timeline: ${err.message}`));
    } finally {
      busy = false;
      if (again) {
        again = false;
        setTimeout(refresh, 1000);
      }
    }
  }
  return { nodes: [el('h2', {}, 'Timeline'), waterfall, details, el('h2', {}, 'Cost and tokens'), cost], refresh };
}

async function showForks(node, runId) {
  try {
    const { runs } = await api(`/api/runs?forkOf=${encodeURIComponent(runId)}`);
    if (!runs.length) return;
    const links = runs.map((r) => el('a', { href: `#/runs/${encodeURIComponent(r.runId)}`, class: 'fork-link' }, r.runId));
    node.replaceChildren(el('strong', {}, 'Forks: '), ...links.flatMap((a, i) => (i ? [', ', a] : [a])));
  } catch (err) {
    say(err.message, true);
  }
}

/** How many steps (assistant messages) come after `message` in the transcript. */
function assistantsAfter(transcript, message) {
  const all = [...transcript.querySelectorAll('.msg-assistant')];
  return all.length - 1 - all.indexOf(message);
}

/** "Fork from here": a small form under the step, for an optional steer and model; the new run opens when it starts. */
function forkForm(runId, message, stepOf) {
  if (message.querySelector('.fork-form')) return;
  const steer = el('input', { class: 'fork-steer', placeholder: 'Steer the fork (optional)' });
  const model = el('input', { class: 'fork-model', placeholder: 'Model (default: the same)', size: 24 });
  const form = el(
    'form',
    { class: 'fork-form' },
    steer,
    model,
    el('button', { type: 'submit', class: 'fork-start' }, 'Start fork'),
    el('button', { type: 'button', onclick: () => form.remove() }, 'Cancel'),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const step = stepOf();
    try {
      const fork = await api(`/api/runs/${encodeURIComponent(runId)}/fork`, {
        step,
        ...(steer.value.trim() ? { steer: steer.value.trim() } : {}),
        ...(model.value.trim() ? { model: model.value.trim() } : {}),
      });
      say(`forked ${runId} at step ${step}: ${fork.runId}`);
      location.hash = `#/runs/${encodeURIComponent(fork.runId)}`;
    } catch (err) {
      say(err.message, true);
    }
  });
  message.append(form);
  steer.focus();
}

const TERMINAL = ['completed', 'failed', 'killed', 'timeout', 'cancelled', 'stuck', 'needs_fix'];

/**
 * An ended run's result, asked for until it comes while the run's page is
 * open: a busy panel or Temporal must not leave the view empty until a reload.
 */
async function showResult(node, runId) {
  for (let attempt = 1; node.isConnected; attempt++) {
    try {
      const { result } = await api(`/api/runs/${encodeURIComponent(runId)}`);
      if (result) {
        if (attempt > 1) say('');
        return renderResult(node, result);
      }
    } catch (err) {
      say(`The result of ${runId} did not come (${err.message}); asking again.`, true);
    }
    await new Promise((r) => setTimeout(r, Math.min(10_000, 500 * 2 ** attempt)));
  }
}

/** The result: status, summary, cause, cost and the verification block. */
function renderResult(node, result) {
  const row = (label, value) => (value === undefined || value === null || value === '' ? null : el('div', {}, el('dt', {}, label), el('dd', {}, value)));
  const verify = result.verify
    ? el(
        'section',
        { id: 'verification', 'aria-label': 'Verification' },
        el(
          'h3',
          {},
          `Verification ${result.verify.passed ? 'passed' : 'failed'} after ${result.verify.attempts} attempt(s) (exit ${result.verify.exitCode ?? '-'})`,
        ),
        el('pre', {}, result.verify.output || '(no output)'),
      )
    : null;
  node.replaceChildren(
    el(
      'section',
      { class: `result result-${result.status}`, 'aria-label': 'Result' },
      el('h2', {}, 'Result'),
      el(
        'dl',
        { class: 'grid' },
        row('Status', stateCell(result.status)),
        row('Steps', String(result.steps)),
        row('Cost', usd(result.costUsd)),
        row('Tokens', `${result.usage.inputTokens} in / ${result.usage.outputTokens} out`),
      ),
      result.summary ? el('p', { id: 'summary' }, el('strong', {}, 'Summary: '), result.summary) : null,
      result.cause ? el('p', { id: 'cause' }, el('strong', {}, 'Cause: '), result.cause) : null,
      verify,
    ),
  );
}

/** Arguments as indented JSON whose strings keep their real line breaks, so a file's content reads as the file. */
function prettyArgs(value, indent = '') {
  const inner = `${indent}  `;
  if (typeof value === 'string') return value.includes('\n') ? `"${value.replaceAll('"', '\\"')}"` : JSON.stringify(value);
  if (Array.isArray(value)) return value.length ? `[\n${value.map((v) => inner + prettyArgs(v, inner)).join(',\n')}\n${indent}]` : '[]';
  if (value && typeof value === 'object') {
    const entries = Object.entries(value);
    if (!entries.length) return '{}';
    return `{\n${entries.map(([k, v]) => `${inner}${JSON.stringify(k)}: ${prettyArgs(v, inner)}`).join(',\n')}\n${indent}}`;
  }
  return JSON.stringify(value ?? null);
}

function formatLeft(ms) {
  if (ms <= 0) return 'passed';
  const s = Math.round(ms / 1000);
  return s < 120 ? `${s}s left` : s < 7200 ? `${Math.round(s / 60)}m left` : `${Math.round(s / 3600)}h left`;
}

function renderStatus(node, s) {
  const item = (label, value, id) => el('div', {}, el('dt', {}, label), el('dd', id ? { id } : {}, value));
  const critic = s.critic
    ? `${s.critic.policy}; next ${s.critic.nextEscalationAt ? new Date(s.critic.nextEscalationAt).toLocaleTimeString() : '-'}; ${s.critic.decisions.length} decision(s)`
    : 'off';
  node.replaceChildren(
    item('State', stateCell(s.state), 'state'),
    item('Step', `${s.step} / ${s.maxSteps}`, 'step'),
    item(
      'Deadline',
      el(
        'span',
        {},
        new Date(s.deadline).toLocaleTimeString(),
        ' (',
        el('span', { id: 'deadline-left' }, TERMINAL.includes(s.state) ? 'ended' : formatLeft(Date.parse(s.deadline) - Date.now())),
        ')',
      ),
      'deadline',
    ),
    item('Consecutive errors', `${s.consecutiveErrors} / ${s.maxConsecutiveErrors}`, 'errors'),
    item('Emergency stop', s.emergencyStop.active ? `ACTIVE: ${s.emergencyStop.reason}` : 'off', 'estop'),
    item('Cost', `${usd(s.costUsd)}${s.budgetUsd !== null ? ` of ${usd(s.budgetUsd)}` : ''}`, 'cost'),
    item('Critic', critic, 'critic'),
    item('Last tool', s.lastTool || '-', 'last-tool'),
    item('Model', s.model),
    ...(s.waitingForProvider
      ? [item('Waiting for', `a provider until ${new Date(s.waitingForProvider.until).toLocaleTimeString()}: ${s.waitingForProvider.why}`, 'waiting-for')]
      : []),
    ...(s.retrying || []).map((r) =>
      item(
        'Retrying',
        `${r.activity}, attempt ${r.attempt}${r.nextAttemptAt ? ` at ${new Date(r.nextAttemptAt).toLocaleTimeString()}` : ''}, after: ${r.lastFailure}`,
        'retrying',
      ),
    ),
    ...(s.forkOf
      ? [
          item(
            'Fork of',
            el('span', {}, el('a', { href: `#/runs/${encodeURIComponent(s.forkOf.runId)}` }, s.forkOf.runId), ` at step ${s.forkOf.step}`),
            'fork-of',
          ),
        ]
      : []),
  );
  node.dataset.state = s.state;
}

/** Who sent which control message, oldest first, as text. */
function renderAudit(node, entries) {
  if (!entries.length) return node.replaceChildren(el('li', { class: 'hint' }, 'No control messages yet.'));
  node.replaceChildren(
    ...entries.map((e) =>
      el(
        'li',
        { 'data-action': e.action, 'data-by': e.by },
        el('time', { datetime: e.at }, new Date(e.at).toLocaleTimeString()),
        ` ${e.action} by `,
        // Isolated: a name or detail written right-to-left (or with a direction override) cannot reorder the rest of the line.
        el('strong', {}, el('bdi', {}, e.by)),
        e.via ? ` (${e.via})` : '',
        e.detail ? ': ' : '',
        e.detail ? el('bdi', {}, e.detail) : '',
      ),
    ),
  );
}

function renderTranscript(node, delta, forkFrom) {
  const kept = [...node.children].slice(0, delta.from);
  node.replaceChildren(
    ...kept,
    ...delta.messages.map((m) => {
      if (m.role === 'tool') {
        const long = m.content.length > 600;
        const body = long ? el('details', {}, el('summary', {}, `${m.content.slice(0, 200)}…`), el('pre', {}, m.content)) : el('pre', {}, m.content);
        return el(
          'div',
          { class: `msg msg-tool${m.success ? '' : ' msg-fail'}` },
          el('span', { class: 'who' }, `tool ${m.toolName} ${m.success ? 'ok' : 'failed'}`),
          body,
        );
      }
      const calls = (m.toolCalls || []).map((c) => el('pre', { class: 'tool-call' }, `→ ${c.name} ${prettyArgs(c.args ?? null)}`));
      const message = el(
        'div',
        { class: `msg msg-${m.role}` },
        el('span', { class: 'who' }, m.role === 'user' && m.source ? `user (${m.source})` : m.role),
        m.content || '',
        calls,
      );
      // Each reply is one step: a fork from here keeps it and its tool results, with the files as they were after it.
      if (m.role === 'assistant') message.append(el('button', { type: 'button', class: 'fork', onclick: () => forkFrom(message) }, 'Fork from here'));
      // Step 0: the goal again, with the files as they were before the first call, perhaps for another model.
      if (m.role === 'user' && m.source === 'goal')
        message.append(el('button', { type: 'button', class: 'fork', onclick: () => forkFrom(message, 0) }, 'Fork from the start'));
      return message;
    }),
  );
}

/** Sends one control message to the run; resolves true once the run took it, so its box can be emptied. */
function controlSender(runId) {
  return async (action, body, confirmText) => {
    if (confirmText && !confirm(confirmText)) return false;
    try {
      const status = await api(`/api/runs/${encodeURIComponent(runId)}/${action}`, body);
      say(`${action}: run is now ${status.state}`);
      return true;
    } catch (err) {
      say(err.message, true);
      return false;
    }
  };
}

/** Empties `input` once the run took what it held. */
const emptiedOnceTaken = (input) => (taken) => {
  if (taken) input.value = '';
};

/** A row of controls led by an input and its label. */
function labelledRow(label, input, ...controls) {
  return el('div', { class: 'actions' }, el('label', { for: input.id }, label), input, ...controls);
}

/** A message to the agent, steering the run. */
function steerRow(act) {
  const text = el('input', { id: 'steer-text', placeholder: 'Message to the agent' });
  return labelledRow(
    'Steer ',
    text,
    el('button', { type: 'button', id: 'steer', onclick: () => act('steer', { message: text.value }).then(emptiedOnceTaken(text)) }, 'Send'),
  );
}

/** Five minutes or ten steps more, or the time and steps typed. */
function extendRow(act) {
  const by = el('input', { id: 'extend-by', placeholder: 'e.g. 15m', size: 8 });
  const steps = el('input', { id: 'extend-steps', type: 'number', min: 1, placeholder: 'steps', size: 6 });
  return el(
    'div',
    { class: 'actions' },
    el('button', { type: 'button', id: 'extend-5m', onclick: () => act('extend', { by: '5m' }) }, '+5 min'),
    el('button', { type: 'button', id: 'extend-10-steps', onclick: () => act('extend', { steps: 10 }) }, '+10 steps'),
    el('label', { for: 'extend-by' }, 'Custom '),
    by,
    steps,
    el(
      'button',
      {
        type: 'button',
        id: 'extend-custom',
        onclick: () => act('extend', { ...(by.value ? { by: by.value } : {}), ...(steps.value ? { steps: Number(steps.value) } : {}) }),
      },
      'Extend',
    ),
  );
}

/** Trip the run's emergency stop (with a reason) or clear it: whichever the run's stop allows. */
function estopRow(act) {
  const reason = el('input', { id: 'estop-reason', placeholder: 'Reason for the stop' });
  const trip = el(
    'button',
    { type: 'button', id: 'estop-trip', class: 'danger', onclick: () => act('estop', { reason: reason.value || 'stopped from the panel' }) },
    'Trip emergency stop',
  );
  const clear = el('button', { type: 'button', id: 'estop-clear', onclick: () => act('clear', {}) }, 'Clear emergency stop');
  return {
    node: labelledRow('Emergency stop ', reason, trip, clear),
    update(s) {
      clear.disabled = !s.emergencyStop.active;
      trip.disabled = s.emergencyStop.active;
    },
  };
}

/** Ends the run, for a reason given and once confirmed. */
function killRow(act, runId) {
  const reason = el('input', { id: 'kill-reason', placeholder: 'Reason (required)' });
  return labelledRow(
    'Kill ',
    reason,
    el(
      'button',
      {
        type: 'button',
        id: 'kill',
        class: 'danger',
        // A kill without a reason is refused: say so before asking whether to kill.
        onclick: () =>
          filled(reason, 'kill needs a reason: say why the run should end') &&
          act('kill', { reason: reason.value }, `Kill run ${runId}? This cannot be undone.`),
      },
      'Kill run',
    ),
  );
}

/** More budget for a run that waits for it; shown only then. */
function approveBox(act) {
  const amount = el('input', { id: 'approve-usd', type: 'number', min: 0, step: 'any', placeholder: 'USD' });
  const node = el(
    'div',
    { class: 'actions', hidden: true },
    el('label', { for: 'approve-usd' }, 'Add budget '),
    amount,
    el('button', { type: 'button', id: 'approve', onclick: () => act('approve', { addBudgetUsd: Number(amount.value) }) }, 'Approve'),
  );
  return {
    node,
    update(s) {
      node.hidden = s.state !== 'awaiting_approval';
    },
  };
}

/** The question a blocked run asks, and the answer to it; shown only while the run is blocked. */
function answerBox(act) {
  const question = el('p', { id: 'question' });
  const text = el('input', { id: 'answer-text', placeholder: 'Your answer' });
  const node = el(
    'div',
    { class: 'actions', hidden: true },
    question,
    el('label', { for: 'answer-text' }, 'Answer '),
    text,
    el('button', { type: 'button', id: 'answer', onclick: () => act('answer', { text: text.value }).then(emptiedOnceTaken(text)) }, 'Send answer'),
  );
  return {
    node,
    update(s) {
      node.hidden = s.state !== 'blocked';
      question.textContent = s.question ? `Question: ${s.question}` : '';
    },
  };
}

/** Every control message a run takes, each enabled while the run can take it. */
function runActions(runId) {
  const act = controlSender(runId);
  const estop = estopRow(act);
  const approve = approveBox(act);
  const answer = answerBox(act);
  const decide = decideBox(act);
  const node = el(
    'section',
    { 'aria-label': 'Actions' },
    steerRow(act),
    extendRow(act),
    estop.node,
    killRow(act, runId),
    approve.node,
    answer.node,
    decide.node,
  );
  return {
    node,
    unavailable(why) {
      for (const control of node.querySelectorAll('button, input')) control.disabled = true;
      node.title = why;
    },
    update(s) {
      // An ended run takes no more control messages: every control is off, and says why.
      const over = TERMINAL.includes(s.state);
      for (const control of node.querySelectorAll('button, input')) control.disabled = over;
      node.title = over ? `The run has ended (${s.state}): nothing to control.` : '';
      // The boxes follow the state even when the run ended between two polls, so none shows a wait that is over.
      approve.update(s);
      answer.update(s);
      decide.update(s);
      if (over) return;
      estop.update(s);
    },
  };
}

/** Deny the held call, for the reason given: the model reads it. */
function denyRow(send, reason) {
  return labelledRow(
    'Deny ',
    reason,
    el(
      'button',
      {
        type: 'button',
        id: 'decide-deny',
        class: 'danger',
        // As `tether decide --deny` does: the model is told the reason, and "no reason" teaches it nothing.
        onclick: () => filled(reason, 'deny needs a reason: the model reads it') && send({ decision: 'deny', reason: reason.value }),
      },
      'Deny',
    ),
  );
}

/** Runs the held call with the arguments typed in `editArgs`, once they are JSON. */
function sendEditedArgs(editArgs, send) {
  let parsed;
  try {
    parsed = JSON.parse(editArgs.value);
  } catch (err) {
    return say(`Edited arguments are not JSON: ${err.message}`, true);
  }
  send({ decision: 'edit', args: parsed });
}

/** The tool call a run holds for approval, in full, with Approve, Deny (with a reason) and Edit (new arguments as JSON). */
function decideBox(act) {
  const heading = el('h3', { id: 'pending-title' });
  const args = el('pre', { id: 'pending-args', class: 'tool-call' });
  const denyReason = el('input', { id: 'deny-reason', placeholder: 'Reason (the model reads it)' });
  const editArgs = el('textarea', { id: 'edit-args', rows: 6, cols: 60, spellcheck: 'false' });
  let callId = null;
  const send = (decision) => act('decide', { callId, ...decision });
  const node = el(
    'section',
    { id: 'pending-call', class: 'stack', 'aria-label': 'Tool call awaiting approval', hidden: true },
    heading,
    args,
    el(
      'div',
      { class: 'actions' },
      el('button', { type: 'button', id: 'decide-approve', class: 'primary', onclick: () => send({ decision: 'approve' }) }, 'Approve'),
    ),
    denyRow(send, denyReason),
    el('label', { for: 'edit-args' }, 'Edit the arguments (JSON), then run them'),
    editArgs,
    el('div', { class: 'actions' }, el('button', { type: 'button', id: 'decide-edit', onclick: () => sendEditedArgs(editArgs, send) }, 'Run edited')),
  );
  return {
    node,
    update(s) {
      // A call held while the run is stopped still waits for its decision, which the run applies when it goes on (as `tether decide` does).
      const call = TERMINAL.includes(s.state) ? null : s.pendingToolCall;
      node.hidden = !call;
      if (!call) return;
      const then = s.state === 'awaiting_tool_approval' ? '' : `; the run is ${s.state} and applies the decision when it goes on`;
      heading.textContent = `Tool call awaiting approval: ${call.tool} (call ${call.callId}, since ${new Date(call.requestedAt).toLocaleTimeString()})${then}`;
      args.textContent = prettyArgs(call.args ?? null);
      // A new call resets the form; the same call keeps what the person is typing.
      if (call.callId !== callId) {
        callId = call.callId;
        editArgs.value = JSON.stringify(call.args ?? {}, null, 2);
        denyReason.value = '';
      }
    },
  };
}

// ---------- routing ----------

function showLogin() {
  closeStream();
  view.replaceChildren(document.getElementById('token-form').content.cloneNode(true));
  document.getElementById('login').addEventListener('submit', (event) => {
    event.preventDefault();
    sessionStorage.setItem('tether-token', document.getElementById('token-input').value);
    route();
  });
}

/** The panel turned the token down: back to the login form, saying so. */
function refused() {
  sessionStorage.removeItem('tether-token');
  showLogin();
  say('That token was refused: use the one `tether panel` (or `tether dev`) printed.', true);
}

async function route() {
  closeStream();
  if (!token()) return showLogin();
  config = await api('/api/config').catch(() => config);
  // A refused token has brought the login form back: nothing else to show.
  if (!token()) return;
  const match = /^#\/runs\/(.+)$/.exec(location.hash);
  if (match) showRun(decodeURIComponent(match[1]));
  else showList();
}

async function fleet(action) {
  const reason = action === 'trip' ? prompt('Reason for stopping every running run:') : '';
  if (action === 'trip' && !reason) return;
  try {
    const outcome = await api('/api/estop', { action, reason });
    say(`fleet ${action}: ${outcome.affected.length} run(s)${outcome.failed.length ? `, ${outcome.failed.length} failed` : ''}`);
  } catch (err) {
    say(err.message, true);
  }
}

document.getElementById('fleet-trip').addEventListener('click', () => fleet('trip'));
document.getElementById('fleet-clear').addEventListener('click', () => fleet('clear'));
window.addEventListener('hashchange', route);
route();
