import type { QueryDefinition, SignalDefinition, UpdateDefinition } from '@temporalio/common';

// The message definitions, made as the workflow SDK's defineQuery/defineSignal/defineUpdate make them
// (plain `{ type, name }` objects). Not imported from it: the client would load the whole workflow SDK
// on every CLI call just to name a query.

export function defineQuery<Ret, Args extends unknown[] = [], Name extends string = string>(name: Name): QueryDefinition<Ret, Args, Name> {
  return { type: 'query', name } as QueryDefinition<Ret, Args, Name>;
}

export function defineSignal<Args extends unknown[] = [], Name extends string = string>(name: Name): SignalDefinition<Args, Name> {
  return { type: 'signal', name } as SignalDefinition<Args, Name>;
}

export function defineUpdate<Ret, Args extends unknown[] = [], Name extends string = string>(name: Name): UpdateDefinition<Ret, Args, Name> {
  return { type: 'update', name } as UpdateDefinition<Ret, Args, Name>;
}
