/**
 * Whether a reply with no tool call is an answer. Such a reply ends the run
 * with its text as the summary, so one the provider cut off at its output
 * limit, or one with nothing in it, must not: the model hears why and goes
 * on, and the failure counts towards the emergency stop like a failed call.
 * Pure.
 */

/** Why the reply is no answer: what the run records as the failure, and what the model is told. */
export interface NotAnAnswer {
  failure: string;
  notice: string;
}

export function notAnAnswer(reply: { text: string; finishReason: string }): NotAnAnswer | null {
  if (reply.finishReason === 'length') {
    return {
      failure: "the model's reply was cut off at its output limit",
      notice:
        'Your last reply was cut off at the output limit before it ended, so it was not taken as your answer. Go on from where it stopped, in smaller pieces, or call finish with a short summary.',
    };
  }
  if (reply.text.trim()) return null;
  if (reply.finishReason === 'content-filter') {
    return {
      failure: "the provider's content filter withheld the model's reply",
      notice: "The provider's content filter withheld your last reply. Rephrase, or call finish with a summary of what was done.",
    };
  }
  if (reply.finishReason === 'tool-calls') {
    return {
      failure:
        "the model's reply ended to call a tool, but held no tool call Tether could read (a server that answers in the legacy function_call format, which is not read, or one that dropped the call)",
      notice: 'Your last reply ended as if it called a tool, but no tool call arrived. Call the tool again, or call finish with a summary of what was done.',
    };
  }
  return {
    failure: "the model's reply was empty: no text and no tool call",
    notice: 'Your last reply was empty: it said nothing and called no tool. Call a tool to make progress, or call finish with a summary of what was done.',
  };
}

/** What the transcript keeps of an empty reply: some providers refuse an assistant message with no content. */
export const EMPTY_REPLY_TEXT = '(empty reply)';
