import { describe, expect, it } from 'vitest';
import { generateToken, MIN_TOKEN_LENGTH, requireToken, tokenProblem, tokensMatch } from '../../src/ops/access-token.js';

describe('access tokens', () => {
  it('never lets an empty token mean "no authentication"', () => {
    expect(tokensMatch('', '')).toBe(false);
    expect(tokensMatch(undefined, '')).toBe(false);
    expect(tokensMatch('', 'x'.repeat(MIN_TOKEN_LENGTH))).toBe(false);
    expect(() => requireToken('', 'TETHER_PANEL_TOKEN')).toThrow(/TETHER_PANEL_TOKEN is empty: set it to a long random value .*or unset it/);
  });

  it(`refuses tokens shorter than ${MIN_TOKEN_LENGTH} characters without quoting them`, () => {
    const short = 'hunter2-hunter2';
    expect(() => requireToken(short, 'TETHER_CODEC_TOKEN')).toThrow(/TETHER_CODEC_TOKEN has 15 characters, fewer than the 24 required/);
    try {
      requireToken(short, 'TETHER_CODEC_TOKEN');
    } catch (err) {
      expect((err as Error).message).not.toContain(short);
    }
  });

  it('refuses characters an Authorization header cannot carry as they are', () => {
    expect(tokenProblem('a token with spaces in it, long enough')).toMatch(/may contain only/);
    expect(tokenProblem('0123456789abcdef0123456789abcdef')).toBeNull();
    expect(tokenProblem('abcDEF0123456789+/._~-xyz0123==')).toBeNull();
  });

  it('matches only the exact token', () => {
    const token = generateToken();
    expect(tokenProblem(token)).toBeNull();
    expect(tokensMatch(token, token)).toBe(true);
    expect(tokensMatch(`${token}x`, token)).toBe(false);
    expect(tokensMatch(token.slice(0, -1), token)).toBe(false);
    expect(generateToken()).not.toBe(token);
  });
});
