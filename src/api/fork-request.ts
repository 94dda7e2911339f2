import { z } from 'zod';
import { modelRef } from './spec.js';
import { auditSchema } from './control.js';

/** A fork's request, from `tether fork` or `POST /api/runs/:id/fork`: the step to fork after, and optionally a steer, a model and the fork's id. */
export const forkRequestSchema = z.strictObject({
  step: z.number({ error: 'step must be a number' }).int('step must be a whole number').min(0, 'step must be 0 or more'),
  steer: z.string().max(200_000).optional(),
  model: modelRef.optional(),
  id: z.string().max(200).optional(),
  // As on the control messages: a sender may say who it is; the panel signs with the operator its token names instead.
  audit: auditSchema.optional(),
});
