/** Keeps the head and tail of a long text with a marker saying what was left out and where it is. */
export function capOutput(text: string, maxChars: number, fullPath?: string): { text: string; truncated: boolean } {
  if (text.length <= maxChars) return { text, truncated: false };
  const half = Math.floor(maxChars / 2);
  const omitted = text.length - 2 * half;
  const where = fullPath ? `; full output in ${fullPath}` : '';
  return { text: `${text.slice(0, half)}\n… [${omitted} characters omitted${where}] …\n${text.slice(-half)}`, truncated: true };
}
