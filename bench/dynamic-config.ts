import { parse } from 'yaml';

/** One entry of a Temporal dynamic config file: a value, optionally only for some namespaces or task queues. */
interface DynamicConfigEntry {
  value: unknown;
  constraints?: Record<string, unknown>;
}

/**
 * The settings of a dynamic config file (deploy/dynamicconfig/tether.yaml)
 * as `temporal server start-dev --dynamic-config-value key=JSON` flags, so a
 * dev server runs with the cluster's settings. Constrained entries have no
 * flag form and are left out; they are returned as `skipped`.
 */
export function dynamicConfigFlags(yamlText: string): { flags: string[]; skipped: string[] } {
  const parsed = (parse(yamlText) ?? {}) as Record<string, DynamicConfigEntry[]>;
  const flags: string[] = [];
  const skipped: string[] = [];
  for (const [key, entries] of Object.entries(parsed)) {
    const plain = (entries ?? []).filter((e) => !e.constraints || Object.keys(e.constraints).length === 0);
    if (plain.length !== 1 || entries.length !== 1) {
      skipped.push(key);
      continue;
    }
    flags.push('--dynamic-config-value', `${key}=${JSON.stringify(plain[0].value)}`);
  }
  return { flags, skipped };
}
