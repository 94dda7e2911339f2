import { loadDataConverter } from '@temporalio/common/lib/internal-non-workflow/index.js';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { describe, expect, it } from 'vitest';
import { decodeEvent } from '../../src/history/decode.js';

/** An activity's end as the server records it when no worker took it in time, or when its attempt ran out of time. */
const timedOut = (timeoutType: string) =>
  historyFromJSON({
    events: [
      {
        eventId: '9',
        eventTime: '2026-11-27T23:53:30.804Z',
        eventType: 'EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT',
        activityTaskTimedOutEventAttributes: {
          failure: { message: `activity ${timeoutType} timeout`, timeoutFailureInfo: { timeoutType } },
          scheduledEventId: '7',
          startedEventId: '0',
        },
      },
    ],
  }).events![0]!;

describe('a call whose worker died, in tether history', () => {
  it('says the worker holding the workspace is gone, not that the call timed out', async () => {
    const event = await decodeEvent(loadDataConverter(), timedOut('TIMEOUT_TYPE_SCHEDULE_TO_START'));
    expect(event).toMatchObject({
      kind: 'activity_failed',
      timedOut: true,
      error: expect.stringMatching(/^interrupted: the worker holding the run's workspace is gone/),
    });
  });

  it('keeps the timeout of a call that ran out of time', async () => {
    const event = await decodeEvent(loadDataConverter(), timedOut('TIMEOUT_TYPE_START_TO_CLOSE'));
    expect(event).toMatchObject({ kind: 'activity_failed', error: 'activity TIMEOUT_TYPE_START_TO_CLOSE timeout' });
  });
});
