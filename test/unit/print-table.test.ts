import { afterEach, describe, expect, it, vi } from 'vitest';
import { printTable } from '../../src/cli/output.js';

function printed(rows: Array<Record<string, string>>, columns: string[]): string[] {
  let out = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    out += String(chunk);
    return true;
  });
  printTable(rows, columns);
  return out.split('\n').slice(0, -1);
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('a table of text from runs', () => {
  it('prints one line a row, aligned', () => {
    expect(
      printed(
        [
          { id: 'a', by: 'ana' },
          { id: 'bbbb', by: 'bo' },
        ],
        ['id', 'by'],
      ),
    ).toEqual(['ID    BY', 'a     ana', 'bbbb  bo']);
  });

  it('escapes control characters, so a name with a newline cannot forge a row and an escape cannot act on the terminal', () => {
    const lines = printed([{ action: 'steer', by: 'evil\nsteer  root\r\t\u001b[2J\u009b' }], ['action', 'by']);
    expect(lines).toEqual(['ACTION  BY', 'steer   evil\\nsteer  root\\r\\t\\u001b[2J\\u009b']);
  });
});
