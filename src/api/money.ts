/**
 * An amount of dollars as people write it: as JavaScript prints it (0.5,
 * 1.25), but never in exponent form, which it uses below a millionth
 * (1e-7). Budgets that small are odd, but a status must still read.
 */
export function plainUsd(amount: number): string {
  const text = String(amount);
  return text.includes('e') ? amount.toFixed(12).replace(/\.?0+$/, '') : text;
}
