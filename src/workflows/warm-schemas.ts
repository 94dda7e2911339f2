import { z } from 'zod';

/**
 * Makes schemas safe to share frozen between workflows.
 *
 * zod changes a schema in place the first time it is used: some members are
 * installed on the class's prototype and copied onto the schema when first
 * read, and a container's parse replaces itself after its first call. The
 * SDK deep-freezes what every workflow shares, and a frozen schema refuses
 * either change: the use would throw inside a workflow task. Using every
 * schema a module reaches, before the freeze, makes those changes then.
 */

/** Prototypes whose getters are the language's own: never lazy members. */
const BUILT_IN = new Set<object>([Object.prototype, Function.prototype, Array.prototype, Map.prototype, Set.prototype, RegExp.prototype, Promise.prototype]);

/** Inputs each schema is parsed with once: enough to take every schema past its first call, whatever its type. */
const PROBES: unknown[] = [undefined, null, {}, [], '', 0, true];

/** Every member that `object`'s prototypes define by a getter and the object does not hold yet. */
function lazyMembers(object: object): PropertyKey[] {
  const keys: PropertyKey[] = [];
  for (let proto = Object.getPrototypeOf(object); proto && !BUILT_IN.has(proto); proto = Object.getPrototypeOf(proto)) {
    for (const key of Reflect.ownKeys(proto)) {
      if (Object.hasOwn(object, key)) continue;
      if (Object.getOwnPropertyDescriptor(proto, key)?.get) keys.push(key);
    }
  }
  return keys;
}

/** A class's prototype: reading a lazy member on it would install the member there, for every instance, computed from no schema. */
function isPrototype(object: object): boolean {
  const owner = Object.hasOwn(object, 'constructor') ? (object as { constructor?: unknown }).constructor : undefined;
  return typeof owner === 'function' && owner.prototype === object;
}

/** A schema, not one of the checks (`.min()`, `.regex()`) a schema holds, which carry `_zod` too but do not parse. */
const isSchema = (value: object): value is z.ZodType => typeof (value as { _zod?: { run?: unknown } })._zod?.run === 'function';

/**
 * Reads every lazy member of every object reachable from `root`, as the SDK's
 * freeze will reach them (own properties, getters included), and returns the
 * objects reached. Functions and prototypes are not entered: they hold no
 * schema state. A member whose computation throws is left as it is: it
 * throws the same way later, frozen or not.
 */
function readAll(root: unknown): object[] {
  const seen = new Set<object>();
  const pending: unknown[] = [root];
  const read = (object: object, key: PropertyKey) => {
    try {
      pending.push((object as Record<PropertyKey, unknown>)[key]);
    } catch {
      // A member that cannot be computed installs nothing.
    }
  };
  while (pending.length) {
    const value = pending.pop();
    if (value === null || typeof value !== 'object' || seen.has(value) || isPrototype(value)) continue;
    seen.add(value);
    for (const key of lazyMembers(value)) read(value, key);
    for (const key of Reflect.ownKeys(value)) read(value, key);
  }
  return [...seen];
}

/**
 * Parses `value` with `schema`. A schema reached inside another one is used
 * out of context here (a transform gets input its pipe never lets through),
 * so what it throws says nothing: only the first call matters.
 */
function parseOnce(schema: z.ZodType, value: unknown): void {
  try {
    z.safeParse(schema, value);
  } catch {
    // the first call has been made
  }
}

/**
 * Uses every schema reachable from `root` until using them changes nothing
 * more: reads their lazy members, parses each with every probe, and reads
 * again what the parses added. Returns how many schemas it reached.
 */
export function warmSchemas(root: unknown): number {
  let reached = -1;
  for (let round = 0; round < 5; round++) {
    const objects = readAll(root);
    if (objects.length === reached) break;
    reached = objects.length;
    for (const schema of objects.filter(isSchema)) for (const probe of PROBES) parseOnce(schema, probe);
  }
  return readAll(root).filter(isSchema).length;
}
