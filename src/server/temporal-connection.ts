import { type Interceptor, InterceptingCall, Metadata, RequesterBuilder, status } from '@grpc/grpc-js';
import { Connection, type ConnectionOptions, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';

/*
 * The SDK retries a call that failed with a retryable code (UNAVAILABLE,
 * RESOURCE_EXHAUSTED) from a timer. Closing a connection fails the calls still
 * waiting for it to connect with UNAVAILABLE ("Channel closed before call
 * started", grpc-js), so a panel or a CLI command that shuts down with a call
 * just sent has it retried after the close. The retry then asks the closed
 * channel for a new call, which throws inside the timer: an uncaught
 * exception, and a caller that never hears back. Below the retries, a call
 * that cannot be made ends CANCELLED instead, so the retries stop and the
 * caller's promise rejects.
 */

/** A call that was never made: it answers what a failed call answers (no message, then its status) and sends nothing. */
function callNotMade(details: string): InterceptingCall {
  const nothing: ConstructorParameters<typeof InterceptingCall>[0] = {
    start() {},
    sendMessage() {},
    sendMessageWithContext() {},
    halfClose() {},
    startRead() {},
    cancelWithStatus() {},
    getPeer: () => '',
    getAuthContext: () => null,
  };
  const requester = new RequesterBuilder()
    .withStart((_metadata, listener) => {
      process.nextTick(() => {
        listener.onReceiveMessage(null);
        listener.onReceiveStatus({ code: status.CANCELLED, details, metadata: new Metadata() });
      });
    })
    .withSendMessage(() => {})
    .withHalfClose(() => {})
    .build();
  return new InterceptingCall(nothing, requester);
}

const endsWhenClosed: Interceptor = (options, nextCall) => {
  try {
    return new InterceptingCall(nextCall(options));
  } catch (err) {
    return callNotMade(`the call to Temporal was not made: ${(err as Error).message}`);
  }
};

/** Every Temporal client connection's interceptors: the SDK's retries, over calls that end CANCELLED once the connection is closed. */
export function clientInterceptors(): Interceptor[] {
  return [makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), endsWhenClosed];
}

/**
 * The largest answer a client accepts. A page of history holds up to 1,000
 * events of up to 2 MB each, and a run's tool arguments and results fill pages
 * past gRPC's default of 4 MiB. The SDK means to allow 128 MiB, but names the
 * channel argument without its `grpc.` prefix, which grpc-js ignores.
 */
const MAX_RECEIVE_BYTES = 128 * 1024 * 1024;

/**
 * Connects to a Temporal frontend as every client of Tether's does. Channelz
 * (gRPC's introspection, served by no process of ours) is off: it
 * time-stamped every call and state change, a tenth of a second of a CLI
 * call's CPU on a busy machine.
 */
export function connectTemporal(options: ConnectionOptions): Promise<Connection> {
  const channelArgs = { 'grpc.enable_channelz': 0, 'grpc.max_receive_message_length': MAX_RECEIVE_BYTES, ...options.channelArgs };
  return Connection.connect({ ...options, channelArgs, interceptors: clientInterceptors() });
}
