/**
 * Secrets and their redaction. A provider key can surface far from where it
 * is used: an HTTP client quotes an invalid header value, a base URL carries
 * credentials, a model echoes what it was shown. Every text that leaves a
 * worker (activity results and failures, heartbeats, logs) passes through one
 * redactor built from the worker's own environment, which knows the values.
 */

/** Names of variables whose values are secrets: provider keys, tokens, passwords, Tether's own keys. */
const SECRET_NAME = /(KEY|SECRET|TOKEN|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|PRIVATE|COOKIE|_PAT$|^PGPASS|DATABASE_URL|_DSN$|OTLP_HEADERS)/i;

/** Below this length a value is too likely to occur by chance to be replaced wherever it appears. */
const MIN_SECRET_LENGTH = 4;

/** Flag-like values a secret-named variable may hold that are no secret and occur everywhere. */
const NOT_A_SECRET = /^(true|false|null|none|yes|no|on|off|enabled|disabled|\d{1,7})$/i;

/** What replaces a secret. Safe inside JSON strings, URLs and headers alike. */
export const REDACTED = '[redacted]';

/** Whether an environment variable's value must be treated as a secret. */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}

/** Names of variables that hold an address (a provider's base URL, an endpoint): the credentials inside one are secrets. */
const ADDRESS_NAME = /(URL|URI|ENDPOINT|HOST|ADDRESS)$/i;

/** Query parameters that carry credentials (`?api-key=`, `x-api-key=`, `sig=`, `access_token=` …). */
const CREDENTIAL_PARAM = /(key|token|sig|secret|pass|auth|cred)/i;

/**
 * The secret values in an environment: each secret variable's value, each
 * item of a comma list (key rotation lists), and the credentials of a URL: in
 * a secret variable, or in an address (a base URL carrying a key as its user
 * name, its password or a query parameter).
 */
export function secretValues(env: NodeJS.ProcessEnv): string[] {
  const values = new Set<string>();
  for (const [name, value] of Object.entries(env)) {
    if (!value) continue;
    const parts = isSecretName(name)
      ? [value, ...value.split(',').map((v) => v.trim()), ...urlCredentials(value)]
      : ADDRESS_NAME.test(name)
        ? urlCredentials(value)
        : [];
    for (const part of parts) if (part.length >= MIN_SECRET_LENGTH && !NOT_A_SECRET.test(part)) values.add(part);
  }
  return [...values];
}

/**
 * A URL's password, or its user name when it has none (a token given as the user name), and its credential-named
 * query values, decoded; none for a text that is no URL. A user name beside a password names an account: no secret.
 */
function urlCredentials(value: string): string[] {
  try {
    const url = new URL(value);
    const query = [...url.searchParams].filter(([param]) => CREDENTIAL_PARAM.test(param)).map(([, v]) => v);
    return [url.password || url.username].filter(Boolean).map(decodeURIComponent).concat(query).filter(Boolean);
  } catch {
    return [];
  }
}

/** A URL as it may be shown: no user name, password or query, which can carry credentials. */
export function displayUrl(value: string): string {
  try {
    const url = new URL(value);
    url.username = '';
    url.password = '';
    url.search = '';
    return url.toString();
  } catch {
    return value.replace(/\/\/[^/@\s]*@/, '//').replace(/\?.*$/, '');
  }
}

/**
 * The ways a value shows up in text: as is, JSON-escaped (once and nested
 * twice, with `/` as is or as `\/`, which PHP's encoder and others write),
 * URL-encoded (upper- or lowercase hex), base64-encoded.
 */
export function secretRenderings(secret: string): string[] {
  const once = JSON.stringify(secret).slice(1, -1);
  const twice = JSON.stringify(once).slice(1, -1);
  const slashed = once.replaceAll('/', '\\/');
  const encoded = encodeURIComponent(secret);
  const lowerHex = encoded.replace(/%[0-9A-F]{2}/g, (hex) => hex.toLowerCase());
  return [secret, once, twice, slashed, JSON.stringify(slashed).slice(1, -1), encoded, lowerHex, ...base64Renderings(secret)];
}

/**
 * The value as it reads inside base64 text (an Authorization header echoed in
 * an error, a config blob): base64 packs three bytes into four characters, so
 * its characters depend on where the value starts. For each of the three
 * starts, the characters that only the value's own bits decide, in the
 * standard and the URL-safe alphabet.
 */
function base64Renderings(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  return [0, 1, 2].flatMap((offset) => {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64');
    const inner = encoded.slice([0, 2, 3][offset], Math.floor((offset + bytes.length) / 3) * 4);
    return [inner, inner.replaceAll('+', '-').replaceAll('/', '_')];
  });
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Credentials that need no known value to be recognised. */
// Every repetition is bounded: an unbounded one backtracks quadratically over a long run of
// letters (a 1 MB file a model writes), and the redactor runs on the worker's event loop.
const CREDENTIAL_PATTERNS: Array<[RegExp, string]> = [
  // scheme://user:password@host, or a user name alone (a key given as one)
  [/(?<![a-z0-9+.-])([a-z][a-z0-9+.-]{0,31}:\/\/)[^\s/@:"'<>]{1,256}(?::[^\s/@"'<>]{1,1024})?@/gi, `$1${REDACTED}@`],
  // Authorization header values
  [/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{4,}/g, `$1 ${REDACTED}`],
  // key=… in a query string or a form: any parameter named for a credential (api-key, x-api-key, sig, access_token …)
  [/([?&][\w.-]{0,32}(?:key|token|sig|secret|pass|auth|cred)[\w.-]{0,32}=)[^&\s"'#]+/gi, `$1${REDACTED}`],
];

/** Replaces secrets in texts and in the strings of any JSON-like value. */
export interface Redactor {
  text(text: string): string;
  /** A copy of `value` with every string redacted; values with no secret come back as they were. */
  value<T>(value: T): T;
  /** Redacts an error in place: message, stack, details and the whole cause chain. */
  error<E>(error: E): E;
  /** A redactor for text that arrives in pieces (a model's tokens); see {@link TextStreamRedactor}. */
  stream(): TextStreamRedactor;
}

/**
 * Redacts a text that arrives in pieces. A known secret may be cut across
 * pieces: the end of the text that could begin one is held back until the
 * next piece (or `flush`) shows whether it does. The credential patterns
 * (Bearer …, user:password@) are applied to each released piece only.
 */
export interface TextStreamRedactor {
  /** The redacted text that is safe to release now. */
  push(piece: string): string;
  /** The rest, redacted, at the end of the text. */
  flush(): string;
}

/** A secret at least this long is also found cut short: its first or last half, or more. */
const MIN_CUT_SECRET_LENGTH = 16;
const MIN_CUT_PART = 12;

/**
 * A secret cut short: the start of it, with the rest gone (a message cut at
 * 300 characters, a reply cut at its limit), or its end (the tail of an
 * output). Texts are cut before they reach the redactor, and a secret cut
 * in two no longer matches whole; the half that remains still gives most of
 * it away.
 */
interface CutSecret {
  /** The shortest start and end of the secret that count: a text holding neither holds no cut secret, and is not scanned. */
  head: string;
  tail: string;
  pattern: RegExp;
}

function cutSecret(secret: string): CutSecret | null {
  if (secret.length < MIN_CUT_SECRET_LENGTH) return null;
  const part = Math.max(MIN_CUT_PART, Math.ceil(secret.length / 2));
  const chars = [...secret].map(escapeRegExp);
  const start = chars.slice(0, part).join('') + chars.slice(part).reduceRight((rest, c) => `(?:${c}${rest})?`, '');
  const end = chars.slice(0, -part).reduce((before, c) => `(?:${before}${c})?`, '') + chars.slice(-part).join('');
  return { head: secret.slice(0, part), tail: secret.slice(-part), pattern: new RegExp(`${start}|${end}`, 'g') };
}

/** A secret written with JSON's `\uXXXX` escapes for some of its characters (a provider's error body quoted as is). */
function unicodeEscapedPattern(secret: string): string {
  return unicodeEscapedChars(secret).join('');
}

/** Each character of a secret as a pattern: as is, or as its `\uXXXX` escape (its backslash doubled too, when nested JSON). */
function unicodeEscapedChars(secret: string): string[] {
  const hex = (code: number) => [...code.toString(16).padStart(4, '0')].map((d) => (/[a-f]/.test(d) ? `[${d}${d.toUpperCase()}]` : d)).join('');
  return [...secret].map((c) => `(?:${escapeRegExp(c)}|\\\\{1,2}u${hex(c.charCodeAt(0))})`);
}

/**
 * A pattern for the longest end of a text that could begin a `\uXXXX`-escaped
 * rendering of one of `secrets`: each character as is or escaped, the last
 * one possibly an escape cut short. A stream holds such an end back until the
 * next piece shows whether it completes a secret.
 */
function escapedPrefixPattern(secrets: string[]): RegExp | null {
  if (!secrets.length) return null;
  const cutEscape = '\\\\{1,2}(?:u[0-9a-fA-F]{0,3})?';
  const starts = secrets.map((secret) => {
    const [first, ...rest] = unicodeEscapedChars(secret);
    const after = rest.reduceRight((tail, char) => `(?:${char}${tail}|${cutEscape})?`, '');
    return `${first}${after}|${cutEscape}`;
  });
  return new RegExp(`(?:${starts.join('|')})$`);
}

/** A redactor for the given secret values (see {@link secretValues}). */
export function createRedactor(secrets: string[]): Redactor {
  const forms = [...new Set(secrets.flatMap(secretRenderings))].filter((f) => f.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length);
  const known = forms.length ? new RegExp(forms.map(escapeRegExp).join('|'), 'g') : null;
  const long = [...new Set(secrets)].filter((s) => s.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length);
  const escaped = long.length ? new RegExp(long.map(unicodeEscapedPattern).join('|'), 'g') : null;
  const escapedStart = escapedPrefixPattern(long);
  const cut = long.map(cutSecret).filter((c): c is CutSecret => c !== null);

  function text(input: string): string {
    let out = known ? input.replace(known, REDACTED) : input;
    if (escaped && out.includes('\\u')) out = out.replace(escaped, REDACTED);
    // A scan for each secret's parts would cost a big text (a tool's output) several times the rest: looked for plainly first.
    for (const c of cut) if (out.includes(c.head) || out.includes(c.tail)) out = out.replace(c.pattern, REDACTED);
    for (const [pattern, replacement] of CREDENTIAL_PATTERNS) out = out.replace(pattern, replacement);
    return out;
  }

  function value<T>(input: T, seen = new WeakSet<object>()): T {
    if (typeof input === 'string') return text(input) as T;
    if (input === null || typeof input !== 'object' || seen.has(input)) return input;
    if (ArrayBuffer.isView(input)) return input;
    seen.add(input);
    if (Array.isArray(input)) return input.map((item) => value(item, seen)) as T;
    if (Object.getPrototypeOf(input) !== Object.prototype && Object.getPrototypeOf(input) !== null) return input;
    return Object.fromEntries(Object.entries(input).map(([k, v]) => [k, value(v, seen)])) as T;
  }

  function error<E>(input: E, seen = new WeakSet<object>()): E {
    if (!(input instanceof Error) || seen.has(input)) return input;
    seen.add(input);
    input.message = text(input.message);
    if (input.stack) input.stack = text(input.stack);
    const withDetails = input as Error & { details?: unknown; cause?: unknown };
    if (Array.isArray(withDetails.details)) withDetails.details = value(withDetails.details);
    if (withDetails.cause) error(withDetails.cause, seen);
    return input;
  }

  function stream(): TextStreamRedactor {
    let held = '';
    return {
      push(piece) {
        held += piece;
        // An escaped rendering may begin wherever a backslash is: held back from there while it could still be one.
        const escapedKeep = escapedStart && held.includes('\\') ? held.length - (escapedStart.exec(held)?.index ?? held.length) : 0;
        const keep = Math.max(secretPrefixAtEnd(held, forms), escapedKeep);
        const out = text(held.slice(0, held.length - keep));
        held = held.slice(held.length - keep);
        return out;
      },
      flush() {
        const out = text(held);
        held = '';
        return out;
      },
    };
  }

  return { text, value: (v) => value(v), error: (e) => error(e), stream };
}

/** The length of the longest end of `text` that begins one of `forms` without completing it. */
function secretPrefixAtEnd(text: string, forms: string[]): number {
  let longest = 0;
  for (const form of forms) {
    for (let length = Math.min(form.length - 1, text.length); length > longest; length--) {
      if (text.endsWith(form.slice(0, length))) {
        longest = length;
        break;
      }
    }
  }
  return longest;
}

/** The redactor of this process's environment. */
export function redactorFromEnv(env: NodeJS.ProcessEnv = process.env): Redactor {
  return createRedactor(secretValues(env));
}

/**
 * The name of the first secret variable whose value occurs in `value` (serialised), or null.
 * Values shorter than `minLength` are ignored: refusing a whole input over a short one (PASSWORD=admin) would refuse innocent text.
 */
export function findSecret(value: unknown, env: NodeJS.ProcessEnv = process.env, minLength = MIN_SECRET_LENGTH): string | null {
  const serialised = typeof value === 'string' ? value : JSON.stringify(value ?? null);
  for (const [name, secret] of Object.entries(env)) {
    if (!secret || !isSecretName(name)) continue;
    const values = secretValues({ [name]: secret }).filter((s) => s.length >= minLength);
    if (values.some((s) => secretRenderings(s).some((form) => serialised.includes(form)))) return name;
  }
  return null;
}

/** Where a secret sits in a structured value: the field's path and the variable it belongs to, never the value. */
export interface SecretField {
  field: string;
  variable: string;
}

/** The first string field of `value` holding a secret of `env` (as is or escaped), or null. */
export function findSecretField(value: unknown, env: NodeJS.ProcessEnv = process.env, minLength = MIN_SECRET_LENGTH): SecretField | null {
  return fieldHolding(value, (text) => findSecret(text, env, minLength));
}

/** The first string field of `value` in which `find` names a secret's variable (or what stands for one), with its path; null when none. */
export function fieldHolding(value: unknown, find: (text: string) => string | null): SecretField | null {
  if (typeof value === 'string') {
    const variable = find(value);
    return variable ? { field: '', variable } : null;
  }
  if (value === null || typeof value !== 'object') return null;
  for (const [key, child] of Object.entries(value)) {
    const found = fieldHolding(child, find);
    if (!found) continue;
    const here = Array.isArray(value) ? `[${key}]` : key;
    const field = found.field === '' ? here : found.field.startsWith('[') ? `${here}${found.field}` : `${here}.${found.field}`;
    return { field, variable: found.variable };
  }
  return null;
}
