import type { SearchAttributeType } from '@temporalio/common';
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
