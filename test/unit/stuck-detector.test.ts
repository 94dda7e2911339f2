import { describe, expect, it } from 'vitest';
import { diagnosticMessage, signatureOf, StuckDetector, type StuckVerdict } from '../../src/run/stuck-detector.js';

const ok = (output: string) => ({ success: true, output });
const fail = (error: string, output = '') => ({ success: false, output, error });

const shell = (command: string, result = ok('done')) => signatureOf('shell', { command }, result);
const read = (path: string, content = `contents of ${path}`) => signatureOf('read_file', { path }, ok(content));
const write = (path: string, content: string) => signatureOf('write_file', { path, content }, ok(`wrote ${path}`));

/** Records every signature and returns every verdict. */
function feed(detector: StuckDetector, signatures: ReturnType<typeof signatureOf>[]): StuckVerdict[] {
  return signatures.map((s) => detector.record(s));
}

const times = <T>(n: number, make: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => make(i));
const calm = (verdicts: StuckVerdict[]) => verdicts.every((v) => !v.stuck);

describe('step signatures', () => {
  it('print arguments as JSON with sorted keys and collapsed whitespace', () => {
    const a = signatureOf('shell', { timeoutMs: 5, command: 'npm   test\n' }, ok(''));
    const b = signatureOf('shell', { command: 'npm test', timeoutMs: 5 }, ok(''));
    expect(a.args).toBe('{"command":"npm test","timeoutMs":5}');
    expect(a).toEqual(b);
  });

  it('tell outputs apart by a short hash', () => {
    expect(shell('npm test', ok('1 failing')).outcome).toMatch(/^ok:[0-9a-f]{8}$/);
    expect(shell('npm test', ok('1 failing'))).not.toEqual(shell('npm test', ok('2 failing')));
  });

  it('ignore timestamps and durations in the output', () => {
    const run = (at: string, took: string) => shell('npm test', ok(`Start at ${at}\n3 passed\nDuration ${took}`));
    expect(run('12:01:02', '1.52s')).toEqual(run('12:07:45', '980ms'));
  });

  it('name an error by its first line with numbers, ids and timestamps masked', () => {
    const sig = signatureOf('read_file', { path: 'x' }, fail('ENOENT 2026-01-01T10:00:00Z request 3fa85f6412 at line 12\nstack…'));
    expect(sig.outcome).toMatch(/^error:ENOENT <time> request <id> at line <n>:[0-9a-f]{8}$/);
  });

  it('add the first line a failed command printed, since its exit code alone says little', () => {
    const sig = shell('node x.js', fail('command exited with 1', '\nError: Cannot find module ./y\n    at x.js:3'));
    expect(sig.outcome).toMatch(/^error:command exited with <n> \| Error: Cannot find module \.\/y:/);
  });
});

describe('the stuck detector', () => {
  it('flags the same call with the same outcome four times in a row, not three', () => {
    const verdicts = feed(
      new StuckDetector(),
      times(4, () => shell('npm test', fail('command exited with 1', 'FAIL'))),
    );
    expect(calm(verdicts.slice(0, 3))).toBe(true);
    expect(verdicts[3]).toEqual({
      stuck: true,
      kind: 'repeat',
      pattern: 'shell {"command":"npm test"} → error:command exited with <n> | FAIL repeated 4 times',
    });
  });

  it('flags an A→B→A→B→A→B ping-pong at the third full cycle', () => {
    const verdicts = feed(
      new StuckDetector(),
      times(6, (i) => (i % 2 ? write('a.txt', 'y') : read('a.txt'))),
    );
    expect(calm(verdicts.slice(0, 5))).toBe(true);
    expect(verdicts[5]).toMatchObject({ stuck: true, kind: 'ping_pong' });
    expect(verdicts[5].stuck && verdicts[5].pattern).toMatch(/^read_file \{"path":"a.txt"\} → write_file .* → read_file .* 3 cycles/);
  });

  it('flags an A→B→C cycle repeated three times', () => {
    const steps = [read('a'), shell('make'), write('a', 'z')];
    const verdicts = feed(
      new StuckDetector(),
      times(9, (i) => steps[i % 3]),
    );
    expect(calm(verdicts.slice(0, 8))).toBe(true);
    expect(verdicts[8]).toMatchObject({ stuck: true, kind: 'ping_pong' });
  });

  it('flags the same error five times within the window, whatever the call', () => {
    const d = new StuckDetector();
    const verdicts = feed(d, [
      shell('npm test -- a', fail('command exited with 1', 'Error: cannot find module x at 12:3')),
      read('notes'),
      shell('npm test -- b', fail('command exited with 1', 'Error: cannot find module x at 14:3')),
      shell('npx vitest', fail('command exited with 2', 'Error: cannot find module x at 2:9')),
      read('more notes'),
      shell('node x', fail('command exited with 1', 'Error: cannot find module x at 1:1')),
      shell('node y', fail('command exited with 1', 'Error: cannot find module x at 5:1')),
    ]);
    expect(calm(verdicts.slice(0, 6))).toBe(true);
    expect(verdicts[6]).toEqual({
      stuck: true,
      kind: 'same_error',
      pattern: 'the same error 5 times in the last 7 steps: command exited with <n> | Error: cannot find module x at <n>:<n>',
    });
  });

  it('does not count errors that have left the window', () => {
    const err = (i: number) => shell(`try ${i}`, fail('boom'));
    const verdicts = feed(new StuckDetector(), [err(1), err(2), err(3), err(4), ...times(6, (i) => read(`f${i}`)), err(5)]);
    expect(calm(verdicts)).toBe(true);
  });

  it('does not flag editing a file and running the same test three times with different results', () => {
    const verdicts = feed(
      new StuckDetector(),
      times(3, (i) => [write('src.js', `v${i}`), shell('npm test', i < 2 ? fail('command exited with 1', `${2 - i} failing`) : ok('all passing'))]).flat(),
    );
    expect(calm(verdicts)).toBe(true);
  });

  it('does not flag running the same command while its output changes', () => {
    const verdicts = feed(
      new StuckDetector(),
      times(8, (i) => shell('ls out', ok(`file${i}`))),
    );
    expect(calm(verdicts)).toBe(true);
  });

  it('does not flag reading several different files', () => {
    expect(
      calm(
        feed(
          new StuckDetector(),
          times(12, (i) => read(`src/file${i}.ts`)),
        ),
      ),
    ).toBe(true);
  });

  it('does not flag a two-step cycle that has not yet gone round three times', () => {
    const verdicts = feed(new StuckDetector(), [...times(5, (i) => (i % 2 ? write('a', 'y') : read('a'))), read('b')]);
    expect(calm(verdicts)).toBe(true);
  });

  it('keeps its window across a snapshot and restore', () => {
    const d = new StuckDetector();
    feed(
      d,
      times(3, () => shell('ls')),
    );
    const restored = new StuckDetector({}, JSON.parse(JSON.stringify(d.snapshot())));
    expect(restored.snapshot()).toEqual(d.snapshot());
    expect(restored.record(shell('ls'))).toMatchObject({ stuck: true, kind: 'repeat' });
  });

  it('forgets the window when reset', () => {
    const d = new StuckDetector();
    feed(
      d,
      times(3, () => shell('ls')),
    );
    d.reset();
    expect(d.snapshot()).toEqual({ window: [] });
    expect(d.record(shell('ls'))).toEqual({ stuck: false });
  });

  it('keeps at most the configured number of steps', () => {
    const d = new StuckDetector({ window: 3 });
    feed(
      d,
      times(5, (i) => read(`f${i}`)),
    );
    expect(d.snapshot().window.map((s) => s.args)).toEqual(['{"path":"f2"}', '{"path":"f3"}', '{"path":"f4"}']);
  });

  it('takes other thresholds', () => {
    const verdicts = feed(
      new StuckDetector({ repeatThreshold: 2 }),
      times(2, () => shell('ls')),
    );
    expect(verdicts[1]).toMatchObject({ stuck: true, kind: 'repeat' });
  });
});

describe('the diagnostic message', () => {
  it('shows the pattern and asks the model to change approach', () => {
    const message = diagnosticMessage({ stuck: true, kind: 'ping_pong', pattern: 'read_file {"path":"a"} → write_file {"path":"a"} → read_file {"path":"a"}' });
    expect(message).toContain('read_file {"path":"a"} → write_file');
    expect(message).toMatch(/alternating/);
    expect(message).toMatch(/different approach/);
  });

  it('names each kind of loop in its own words', () => {
    const texts = (['repeat', 'ping_pong', 'same_error'] as const).map((kind) => diagnosticMessage({ stuck: true, kind, pattern: 'p' }));
    expect(new Set(texts).size).toBe(3);
  });
});
