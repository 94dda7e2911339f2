import type { SearchAttributeType } from '@temporalio/common';
import proto, { type temporal } from '@temporalio/proto';
import { connectTemporal } from './temporal-connection.js';
import { TETHER_SEARCH_ATTRIBUTES } from '../api/search-attributes.js';

/** The Temporal CLI's name of each search attribute type. */
const CLI_TYPES: Record<SearchAttributeType, string> = {
  TEXT: 'Text',
  KEYWORD: 'Keyword',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
  KEYWORD_LIST: 'KeywordList',
};

/** The search attributes of DESIGN.md with the type names the Temporal CLI uses. */
export const SEARCH_ATTRIBUTES = TETHER_SEARCH_ATTRIBUTES.map((key) => ({ key, cliType: CLI_TYPES[key.type] }));

/** `--search-attribute Name=Type` pairs for `temporal server start-dev`. */
export function searchAttributeFlags(): string[] {
  return SEARCH_ATTRIBUTES.flatMap(({ key, cliType }) => ['--search-attribute', `${key.name}=${cliType}`]);
}

// @temporalio/proto is CommonJS: its namespaces come through the default export.
const IVT = proto.temporal.api.enums.v1.IndexedValueType;
const INDEXED_TYPE: Record<string, temporal.api.enums.v1.IndexedValueType> = {
  Text: IVT.INDEXED_VALUE_TYPE_TEXT,
  Keyword: IVT.INDEXED_VALUE_TYPE_KEYWORD,
  Int: IVT.INDEXED_VALUE_TYPE_INT,
  Double: IVT.INDEXED_VALUE_TYPE_DOUBLE,
  Bool: IVT.INDEXED_VALUE_TYPE_BOOL,
  Datetime: IVT.INDEXED_VALUE_TYPE_DATETIME,
  KeywordList: IVT.INDEXED_VALUE_TYPE_KEYWORD_LIST,
};

/** What registering needs of a connection: a client's Connection and a worker's NativeConnection both have it. */
export type SearchAttributeOperator = Pick<temporal.api.operatorservice.v1.OperatorService, 'listSearchAttributes' | 'addSearchAttributes'>;

/**
 * Adds any of Tether's search attributes that the namespace lacks (a database
 * from an older version, or a server Tether did not start) — the same call as
 * `temporal operator search-attribute create`. "Already exists" is fine.
 * Returns the names it added.
 */
export async function registerSearchAttributes(operator: SearchAttributeOperator, namespace: string): Promise<string[]> {
  const { customAttributes } = await operator.listSearchAttributes({ namespace });
  const missing = SEARCH_ATTRIBUTES.filter(({ key }) => !(customAttributes && key.name in customAttributes));
  if (!missing.length) return [];
  const searchAttributes: Record<string, temporal.api.enums.v1.IndexedValueType> = {};
  for (const { key, cliType } of missing) searchAttributes[key.name] = INDEXED_TYPE[cliType]!;
  try {
    await operator.addSearchAttributes({ namespace, searchAttributes });
  } catch (err) {
    if (!/already exists/i.test(String((err as Error).message))) {
      throw new Error(`could not register search attributes ${missing.map((m) => m.key.name).join(', ')} in namespace ${namespace}: ${(err as Error).message}`);
    }
  }
  return missing.map((m) => m.key.name);
}

/** registerSearchAttributes over a connection of its own to `address`. */
export async function ensureSearchAttributes(address: string, namespace = 'default'): Promise<string[]> {
  const connection = await connectTemporal({ address });
  try {
    return await registerSearchAttributes(connection.operatorService, namespace);
  } finally {
    await connection.close();
  }
}
