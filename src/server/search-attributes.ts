import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

// Imported by the workflow bundle: @temporalio/common only, nothing from node:.

export const TetherStateKey = defineSearchAttributeKey('TetherState', SearchAttributeType.KEYWORD);
export const TetherEmergencyStopKey = defineSearchAttributeKey('TetherEmergencyStop', SearchAttributeType.BOOL);
export const TetherConsecutiveErrorsKey = defineSearchAttributeKey('TetherConsecutiveErrors', SearchAttributeType.INT);
export const TetherCostUsdKey = defineSearchAttributeKey('TetherCostUsd', SearchAttributeType.DOUBLE);
export const TetherStepsKey = defineSearchAttributeKey('TetherSteps', SearchAttributeType.INT);
export const TetherModelKey = defineSearchAttributeKey('TetherModel', SearchAttributeType.KEYWORD);

/** The search attributes of DESIGN.md with the type names the Temporal CLI uses. */
export const SEARCH_ATTRIBUTES = [
  { key: TetherStateKey, cliType: 'Keyword' },
  { key: TetherEmergencyStopKey, cliType: 'Bool' },
  { key: TetherConsecutiveErrorsKey, cliType: 'Int' },
  { key: TetherCostUsdKey, cliType: 'Double' },
  { key: TetherStepsKey, cliType: 'Int' },
  { key: TetherModelKey, cliType: 'Keyword' },
] as const;

/** `--search-attribute Name=Type` pairs for `temporal server start-dev`. */
export function searchAttributeFlags(): string[] {
  return SEARCH_ATTRIBUTES.flatMap(({ key, cliType }) => ['--search-attribute', `${key.name}=${cliType}`]);
}
