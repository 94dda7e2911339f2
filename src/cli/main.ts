import { Command } from 'commander';
import { registerControlCommands } from './commands/control.js';
import { registerDemoCommand } from './commands/demo.js';
import { registerInspectCommands } from './commands/inspect.js';
import { registerOpsCommands } from './commands/ops.js';
import { registerRunCommand } from './commands/run.js';
import { registerServeCommands } from './commands/serve.js';
import { registerPanelCommand } from '../panel/command.js';

/** The `tether` command line. */
export function buildProgram(): Command {
  const program = new Command('tether')
    .description('Durable LLM agent runs on Temporal: start, steer, extend, kill and stop them safely.')
    .version('0.1.0')
    .showHelpAfterError('(run with --help for usage)');
  registerServeCommands(program);
  registerDemoCommand(program);
  registerPanelCommand(program);
  registerRunCommand(program);
  registerInspectCommands(program);
  registerControlCommands(program);
  registerOpsCommands(program);
  return program;
}

await buildProgram().parseAsync(process.argv);
