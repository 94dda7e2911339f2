/**
 * Named panel operators: TETHER_PANEL_TOKENS maps names to tokens, so the
 * panel can say who sent each control message (the run's audit trail). The
 * name always comes from the token that authenticated, never from a request.
 */
import { tokenProblem, tokensMatch } from './access-token.js';

/** One person (or script) allowed into the panel, and the token that says it is them. */
export interface PanelOperator {
  name: string;
  token: string;
}

/** The operator TETHER_PANEL_TOKEN (or the generated token) authenticates as. */
export const DEFAULT_OPERATOR = 'panel';

const NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

/** Names the audit trail gives senders that are not operators: an operator so named would pass for one of them. */
const RESERVED = [DEFAULT_OPERATOR, 'critic', 'unknown', 'loop guard', 'fleet emergency stop'];

/**
 * Parses `alice:tok1,bob:tok2`. Every token must pass the same rules as
 * TETHER_PANEL_TOKEN, and names and tokens must be unique: a variable that is
 * set but empty, or holds one short token, must never mean "no authentication".
 * Messages name the entry, never quote a token. Pure.
 */
export function parseOperatorTokens(value: string, variable = 'TETHER_PANEL_TOKENS'): PanelOperator[] {
  const entries = value.split(',').map((e) => e.trim());
  if (entries.every((e) => e === ''))
    throw new Error(`${variable} is empty: set it to name:token pairs separated by commas (e.g. alice:<token>,bob:<token>), or unset it`);
  const operators = entries.map((entry, i) => parseEntry(entry, i + 1, variable));
  const seen = new Set<string>();
  for (const { name, token } of operators) {
    const folded = name.toLowerCase();
    if (RESERVED.includes(folded)) throw new Error(`${variable} names an operator "${name}", which the audit trail keeps for others (${RESERVED.join(', ')})`);
    // Two names that differ only in case read as one person in the audit trail.
    if (seen.has(folded)) throw new Error(`${variable} names operator "${name}" twice (names are compared without case)`);
    seen.add(folded);
    if (operators.filter((o) => o.token === token).length > 1) throw new Error(`${variable} gives operator "${name}" a token another operator has`);
  }
  return operators;
}

function parseEntry(entry: string, position: number, variable: string): PanelOperator {
  const colon = entry.indexOf(':');
  if (colon < 0) throw new Error(`${variable} entry ${position} is not name:token`);
  const name = entry.slice(0, colon).trim();
  const token = entry.slice(colon + 1).trim();
  if (!NAME.test(name))
    throw new Error(`${variable} entry ${position}: the name must be 1 to 64 letters, digits and . _ @ - (starting with a letter or digit)`);
  const problem = tokenProblem(token);
  if (problem) throw new Error(`${variable}: the token of operator "${name}" ${problem}: use a long random value (e.g. \`openssl rand -hex 24\`)`);
  return { name, token };
}

/** The operator a bearer token authenticates, or null. Every operator's token is compared, so timing says nothing about which matched. */
export function operatorOf(given: string | null | undefined, operators: readonly PanelOperator[]): string | null {
  let found: string | null = null;
  for (const op of operators) if (tokensMatch(given, op.token) && found === null) found = op.name;
  return found;
}
