import { describe, expect, it } from 'vitest';
import { operatorOf, parseOperatorTokens } from '../../src/ops/panel-operators.js';

const ALICE = 'alice-token-0123456789abcdef';
const BOB = 'bob-token-0123456789abcdef01';

describe('TETHER_PANEL_TOKENS', () => {
  it('maps names to tokens', () => {
    expect(parseOperatorTokens(` alice:${ALICE} , bob:${BOB}`)).toEqual([
      { name: 'alice', token: ALICE },
      { name: 'bob', token: BOB },
    ]);
  });

  it('never lets an empty or short token mean "no authentication", and never quotes a token', () => {
    expect(() => parseOperatorTokens('')).toThrow(/TETHER_PANEL_TOKENS is empty/);
    expect(() => parseOperatorTokens(' , ')).toThrow(/is empty/);
    expect(() => parseOperatorTokens('alice:')).toThrow(/token of operator "alice" is empty/);
    try {
      parseOperatorTokens('alice:short-secret');
      expect.unreachable();
    } catch (err) {
      expect((err as Error).message).toMatch(/"alice" has 12 characters, fewer than the 24 required/);
      expect((err as Error).message).not.toContain('short-secret');
    }
  });

  it('refuses malformed entries, duplicate names and shared tokens', () => {
    expect(() => parseOperatorTokens(ALICE)).toThrow(/entry 1 is not name:token/);
    expect(() => parseOperatorTokens(`:${ALICE}`)).toThrow(/entry 1: the name must be/);
    expect(() => parseOperatorTokens(`alice:${ALICE},alice:${BOB}`)).toThrow(/"alice" twice/);
    // Names the audit trail gives other senders, and names that differ only in case, would pass one sender for another.
    for (const name of ['panel', 'critic', 'Unknown']) expect(() => parseOperatorTokens(`${name}:${ALICE}`)).toThrow(/keeps for others/);
    expect(() => parseOperatorTokens(`Alice:${ALICE},alice:${BOB}`)).toThrow(/"alice" twice \(names are compared without case\)/);
    expect(() => parseOperatorTokens(`alice:${ALICE},bob:${ALICE}`)).toThrow(/a token another operator has/);
  });

  it('names the operator whose token matched, and nobody for any other token', () => {
    const ops = parseOperatorTokens(`alice:${ALICE},bob:${BOB}`);
    expect(operatorOf(BOB, ops)).toBe('bob');
    expect(operatorOf(ALICE, ops)).toBe('alice');
    expect(operatorOf(`${BOB}x`, ops)).toBeNull();
    expect(operatorOf('', ops)).toBeNull();
    expect(operatorOf(undefined, ops)).toBeNull();
  });
});
