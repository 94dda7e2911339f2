// The run page's pictures: the timeline as a waterfall and the cost curve.
// Plain SVG built with DOM APIs (createElementNS, textContent): no library to
// vet or pin, nothing inline for the strict CSP to refuse (colours come from
// classes in style.css), and every piece of run data lands as text.

const SVG_NS = 'http://www.w3.org/2000/svg';
const WIDTH = 960;
const LABEL = 300;
const ROW = 18;
/** A long run's waterfall shows its latest spans; the CLI's --timeline has them all. */
const MAX_SPANS = 300;

function svgEl(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) if (value !== undefined && value !== null) node.setAttribute(key, String(value));
  for (const child of children) if (child !== null && child !== undefined) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

const money = (v) => `$${Number(v).toFixed(4)}`;
function took(ms) {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** What a span was, as lines of text: the tooltip, the aria label and the details box say the same. */
function spanText(span, nowMs) {
  const end = span.endedAt ? Date.parse(span.endedAt) : nowMs;
  const lines = [
    `${span.kind} · step ${span.step} · ${span.name}`,
    `${span.startedAt.slice(11, 23)} → ${span.endedAt ? span.endedAt.slice(11, 23) : 'now'} (${took(end - Date.parse(span.startedAt))}${span.endedAt ? '' : ', still going'})`,
    `outcome: ${span.outcome}${span.attempts > 1 ? ` · ${span.attempts} attempts` : ''}`,
  ];
  if (span.costUsd !== undefined)
    lines.push(`cost: ${money(span.costUsd)}${span.tokens ? ` · ${span.tokens.input} in / ${span.tokens.output} out tokens` : ''}`);
  for (const error of span.errors ?? (span.error ? [span.error] : [])) lines.push(`error: ${error}`);
  return lines;
}

/** Draws the waterfall into `container`; focusing or hovering a span writes its details into `detailsBox`. */
function drawWaterfall(container, detailsBox, timeline, nowMs = Date.now()) {
  const spans = timeline.spans.slice(-MAX_SPANS);
  const starts = [...spans.map((s) => Date.parse(s.startedAt)), ...timeline.executions.map((x) => Date.parse(x.startedAt))];
  const from = Math.min(...starts);
  const to = Math.max(
    from + 1,
    ...spans.map((s) => (s.endedAt ? Date.parse(s.endedAt) : nowMs)),
    ...timeline.executions.map((x) => (x.endedAt ? Date.parse(x.endedAt) : nowMs)),
  );
  const x = (ms) => LABEL + ((ms - from) / (to - from)) * (WIDTH - LABEL - 8);
  const height = spans.length * ROW + 24;
  const chart = svgEl('svg', { id: 'waterfall', viewBox: `0 0 ${WIDTH} ${height}`, width: '100%', role: 'group', 'aria-label': 'Timeline of the run' });
  chart.append(svgEl('text', { x: LABEL, y: 12, class: 'axis' }, '0'), svgEl('text', { x: WIDTH - 8, y: 12, class: 'axis end' }, took(to - from)));
  for (const [i, execution] of timeline.executions.entries()) {
    if (i === 0 || Date.parse(execution.startedAt) < from) continue;
    const at = x(Date.parse(execution.startedAt));
    chart.append(svgEl('line', { x1: at, x2: at, y1: 16, y2: height, class: 'continued' }, svgEl('title', {}, `continued as new: execution ${i + 1}`)));
  }
  const show = (span) =>
    detailsBox.replaceChildren(...spanText(span, nowMs).map((line) => Object.assign(document.createElement('div'), { textContent: line })));
  for (const [i, span] of spans.entries()) {
    const y = 20 + i * ROW;
    const left = x(Date.parse(span.startedAt));
    const width = Math.max(2, x(span.endedAt ? Date.parse(span.endedAt) : nowMs) - left);
    const classes = [
      'span',
      `span-${span.kind}`,
      span.attempts > 1 ? 'retried' : '',
      ['failed', 'timed_out', 'cancelled'].includes(span.outcome) ? 'failed' : '',
    ]
      .filter(Boolean)
      .join(' ');
    const text = spanText(span, nowMs);
    const row = svgEl(
      'g',
      {
        class: classes,
        tabindex: 0,
        'aria-label': text.join('; '),
        'data-kind': span.kind,
        'data-step': span.step,
        'data-key': `${span.kind}|${span.startedAt}`,
      },
      svgEl('title', {}, text.join('\n')),
      svgEl('text', { x: 4, y: y + 12, class: 'label' }, `${span.step ? `${span.step} ` : ''}${span.name}`.slice(0, 44)),
      svgEl('rect', { x: left, y: y + 2, width, height: ROW - 5, rx: 2 }),
    );
    row.addEventListener('mouseenter', () => show(span));
    row.addEventListener('focus', () => show(span));
    chart.append(row);
  }
  const note =
    timeline.spans.length > spans.length ? `The latest ${spans.length} of ${timeline.spans.length} spans (tether history --timeline has them all).` : '';
  container.replaceChildren(chart, ...(note ? [Object.assign(document.createElement('p'), { className: 'hint', textContent: note })] : []));
}

const WARNINGS = [0.75, 0.8, 0.9];

/** Cumulative cost (and tokens, on their own scale) per step, with the budget and its 75/80/90 % warnings marked. */
function drawCostCurve(container, curve, budgetUsd) {
  const height = 220;
  const pad = { left: 64, right: 64, top: 14, bottom: 26 };
  const lastStep = Math.max(1, ...curve.map((p) => p.step));
  const maxCost = Math.max(1e-9, ...curve.map((p) => p.costUsd), budgetUsd ?? 0) * 1.05;
  const maxTokens = Math.max(1, ...curve.map((p) => p.inputTokens + p.outputTokens));
  const x = (step) => pad.left + (step / lastStep) * (WIDTH - pad.left - pad.right);
  const yCost = (usd) => height - pad.bottom - (usd / maxCost) * (height - pad.top - pad.bottom);
  const yTokens = (n) => height - pad.bottom - (n / maxTokens) * (height - pad.top - pad.bottom);
  const chart = svgEl('svg', { id: 'cost-curve', viewBox: `0 0 ${WIDTH} ${height}`, width: '100%', role: 'img' });
  const spent = curve.at(-1)?.costUsd ?? 0;
  chart.setAttribute('aria-label', `Cost ${money(spent)} after ${curve.at(-1)?.step ?? 0} steps${budgetUsd ? ` of a ${money(budgetUsd)} budget` : ''}`);
  chart.append(
    svgEl('line', { x1: pad.left, x2: WIDTH - pad.right, y1: height - pad.bottom, y2: height - pad.bottom, class: 'axis-line' }),
    svgEl('text', { x: pad.left, y: height - 8, class: 'axis' }, 'step 0'),
    svgEl('text', { x: WIDTH - pad.right, y: height - 8, class: 'axis end' }, `step ${lastStep}`),
    svgEl('text', { x: pad.left - 4, y: yCost(0), class: 'axis end' }, '$0'),
    svgEl('text', { x: WIDTH - pad.right + 4, y: yTokens(maxTokens) + 10, class: 'axis tokens-label' }, `${maxTokens} tok`),
  );
  if (budgetUsd) {
    chart.append(svgEl('line', { x1: pad.left, x2: WIDTH - pad.right, y1: yCost(budgetUsd), y2: yCost(budgetUsd), class: 'budget-line' }));
    chart.append(svgEl('text', { x: pad.left - 4, y: yCost(budgetUsd) + 4, class: 'axis end budget-label' }, money(budgetUsd)));
    for (const share of WARNINGS) {
      const y = yCost(budgetUsd * share);
      const crossed = curve.find((p) => p.costUsd >= budgetUsd * share);
      const mark = svgEl('g', { class: `warning-mark${crossed ? ' crossed' : ''}`, 'data-share': Math.round(share * 100) });
      mark.append(
        svgEl('line', { x1: pad.left, x2: WIDTH - pad.right, y1: y, y2: y }),
        svgEl('text', { x: WIDTH - pad.right + 4, y: y + 4 }, `${Math.round(share * 100)} %`),
      );
      if (crossed)
        mark.append(
          svgEl('circle', { cx: x(crossed.step), cy: y, r: 4 }, svgEl('title', {}, `${Math.round(share * 100)} % of the budget used at step ${crossed.step}`)),
        );
      chart.append(mark);
    }
  }
  const line = (y, cls, value) =>
    svgEl('polyline', { class: cls, points: [[x(0), y(0)], ...curve.map((p) => [x(p.step), y(value(p))])].map((pt) => pt.join(',')).join(' ') });
  chart.append(
    line(yTokens, 'tokens-line', (p) => p.inputTokens + p.outputTokens),
    line(yCost, 'cost-line', (p) => p.costUsd),
  );
  const legend = document.createElement('p');
  legend.className = 'hint';
  legend.textContent = `Cost ${money(spent)}${budgetUsd ? ` of ${money(budgetUsd)} (${Math.round((spent / budgetUsd) * 100)} %)` : ', no budget set'} · ${maxTokens} tokens · solid: cost, dotted: tokens; budget warnings at 75, 80 and 90 %.`;
  container.replaceChildren(chart, legend);
}

window.TetherCharts = { drawWaterfall, drawCostCurve };
