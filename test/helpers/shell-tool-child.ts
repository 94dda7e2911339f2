// Runs one sandboxed shell call in a process of its own and prints its ToolResult as JSON: a test starts it
// with descriptors of its choosing, as whatever starts a worker might hand it some.
import { executeTool } from '../../src/tools/execute.js';
import { sandboxHost } from '../../src/tools/host-probe.js';

const [workspace, command] = process.argv.slice(2);
const result = await executeTool('shell', { command }, { workspace, callId: 'inherited-fds', timeoutMs: 20_000, env: process.env, host: await sandboxHost() });
process.stdout.write(JSON.stringify(result));
