/** Names of variables that hold secrets: provider keys and Tether's own. */
export const SECRET_ENV_PATTERN = /(API_KEY|_SECRET|SECRET_|_TOKEN|_PASSWORD|_ACCESS_KEY|_PRIVATE_KEY|^TETHER_ENCRYPTION_KEYS?$)/i;

export function isSecretEnvName(name: string): boolean {
  return SECRET_ENV_PATTERN.test(name);
}

/** A copy of the environment without secrets, for tool processes. */
export function scrubEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (value !== undefined && !isSecretEnvName(name)) out[name] = value;
  return out;
}

/** The values of secret variables (long enough to be worth redacting), for log filters. */
export function secretValues(env: NodeJS.ProcessEnv): string[] {
  return Object.entries(env)
    .filter(([name, value]) => isSecretEnvName(name) && value)
    // A key list (TETHER_ENCRYPTION_KEYS) is redacted key by key as well as whole.
    .flatMap(([, value]) => [value as string, ...(value as string).split(',').map((v) => v.trim())])
    .filter((value, i, all) => value.length >= 8 && all.indexOf(value) === i);
}
