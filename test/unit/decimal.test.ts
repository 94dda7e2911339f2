import { describe, expect, it } from 'vitest';
import { decimal } from '../../src/cli/decimal.js';
import { portOption } from '../../src/cli/ports.js';

describe('numbers in flags', () => {
  it('reads decimal notation', () => {
    expect([' 42 ', '-3', '+7', '0.5', '.5', '2.', '007'].map(decimal)).toEqual([42, -3, 7, 0.5, 0.5, 2, 7]);
  });

  it('refuses what Number() would also take: hex, binary, octal, exponents, blanks, words', () => {
    for (const value of ['0x10', '0b11', '0o7', '1e2', '', '  ', 'Infinity', 'NaN', '1_000', '1,5', '5px', undefined])
      expect(decimal(value), String(value)).toBeNaN();
  });

  it('refuses a port written as hex or left empty, instead of taking it as 16 or "any free port"', () => {
    expect(() => portOption('0x1f90', '--port')).toThrow('invalid --port "0x1f90": a port is 0 to 65535');
    expect(() => portOption('', '--panel-port')).toThrow('invalid --panel-port "": a port is 0 to 65535');
    expect(portOption('8787', '--panel-port')).toBe(8787);
  });
});
