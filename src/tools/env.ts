/** What every tool gets from the worker's environment, when set there. */
const ALLOWED_NAMES = new Set(['PATH', 'LANG', 'LANGUAGE', 'TERM', 'TZ', 'USER', 'LOGNAME', 'SHELL']);
const LOCALE_NAME = /^LC_[A-Z_]+$/;
/**
 * The machinery around a run: even an operator's pass-through list cannot hand
 * these to a tool, because with them a tool could steer its own run or spend
 * on the worker's provider accounts.
 */
// Case does not matter: `openai_api_key` is read by some tools as readily as `OPENAI_API_KEY`.
const MACHINERY_NAME = /^(TEMPORAL_|TETHER_|OPENAI_|ANTHROPIC_|OLLAMA_)/i;
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The operator's `TETHER_TOOL_ENV=NAME1,NAME2`: names passed to tools on top of the allow-list, and those refused. */
export function toolEnvPassThrough(source: NodeJS.ProcessEnv): { names: string[]; refused: string[] } {
  const listed = (source.TETHER_TOOL_ENV ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  return { names: listed.filter((name) => !MACHINERY_NAME.test(name)), refused: listed.filter((name) => MACHINERY_NAME.test(name)) };
}

/**
 * A tool's environment, built from an allow-list rather than by removing
 * known secrets: a variable nobody thought of (a database URL, a CI token, a
 * collector's auth header, NODE_OPTIONS) never reaches a tool by accident.
 */
export function toolEnvironment(source: NodeJS.ProcessEnv, where: { home: string; tmpdir: string }): Record<string, string> {
  const env: Record<string, string> = {};
  const pass = new Set(toolEnvPassThrough(source).names);
  // A listed variable that holds a provider key under another name (MY_KEY=$OPENAI_API_KEY) is the key all the same.
  const machineryValues = new Set(Object.entries(source).flatMap(([name, value]) => (MACHINERY_NAME.test(name) && value && value.length >= 8 ? [value] : [])));
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined) continue;
    if (ALLOWED_NAMES.has(name) || LOCALE_NAME.test(name) || (pass.has(name) && !machineryValues.has(value))) env[name] = value;
  }
  env.PATH ||= DEFAULT_PATH;
  env.HOME = where.home;
  env.TMPDIR = where.tmpdir;
  return env;
}
