// Loaded by path (DataConverter.failureConverterPath): the worker require()s it
// and the workflow bundler inlines it into the sandbox, so it is plain
// CommonJS that imports nothing but @temporalio/common.
//
// With encodeCommonAttributes, a failure's message and stack trace travel in
// an encoded payload that the encryption codec seals, instead of in clear
// text beside it (an ApplicationFailure's message can quote a run's cause).
const { DefaultFailureConverter } = require('@temporalio/common');

exports.failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
