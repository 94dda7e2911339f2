import { Command, CommanderError } from 'commander';
import { registerClusterCommands } from './commands/cluster.js';
import { registerControlCommands } from './commands/control.js';
import { registerDemoCommand } from './commands/demo.js';
import { registerForkCommand } from './commands/fork.js';
import { registerInspectCommands } from './commands/inspect.js';
import { registerOpsCommands } from './commands/ops.js';
import { registerPanelCommand } from './commands/panel.js';
import { registerRunCommand } from './commands/run.js';
import { registerServeCommands } from './commands/serve.js';
import { dropOutputOnClosedPipe } from './closed-pipe.js';
import { EXIT, exitCodeHelp } from './exit-codes.js';
import { printJson } from './output.js';

/**
 * The `tether` command line. Registering the verbs loads nothing heavy: each
 * verb imports the Temporal client, the worker or the panel when it runs, so
 * `tether --help` answers at once.
 */
export function buildProgram(): Command {
  const program = new Command('tether')
    .description('Durable LLM agent runs on Temporal: start, steer, extend, kill and stop them safely.')
    .version('0.1.0')
    // Inherited by every verb registered after it: commander's own usage errors exit 2 like ours.
    .exitOverride()
    .showHelpAfterError('(run with --help for usage)')
    .helpCommand(false)
    .addHelpText('after', `\n${exitCodeHelp()}`);
  registerServeCommands(program);
  registerDemoCommand(program);
  registerPanelCommand(program);
  registerRunCommand(program);
  registerInspectCommands(program);
  registerControlCommands(program);
  registerForkCommand(program);
  registerOpsCommands(program);
  registerClusterCommands(program);
  registerHelpCommand(program);
  return program;
}

/** `tether help [verb]`: commander's own prints the whole help, in error, for a verb it does not know, without saying so. */
function registerHelpCommand(program: Command): void {
  program
    .command('help')
    .argument('[command]')
    .description('display help for command')
    .option('--output <format>', 'text or json (for the error of an unknown command)', 'text')
    .action((name: string | undefined) => {
      if (name === undefined) program.help();
      const verb = program.commands.find((c) => c.name() === name || c.aliases().includes(name));
      if (!verb) program.error(`error: unknown command '${name}'`, { code: 'commander.unknownCommand', exitCode: EXIT.usage });
      verb.help();
    });
}

/** Runs the CLI; a usage error found by commander (unknown option, missing argument, bad choice) exits 2. */
export async function main(argv: string[]): Promise<void> {
  // Held until the verb is done: a library's unref'd timer (fetch's AbortSignal.timeout) must still fire,
  // not let the event loop run dry and end the process with exit 13 and no word said.
  const alive = setInterval(() => {}, 60_000);
  dropOutputOnClosedPipe(process.stdout);
  dropOutputOnClosedPipe(process.stderr);
  try {
    await buildProgram().parseAsync(argv);
  } catch (err) {
    if (!(err instanceof CommanderError)) throw err;
    // Help and --version end with code 0; everything else commander throws is a usage error it has already printed.
    process.exitCode = err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    // A script that asked for JSON reads the last line of stdout: the usage error is there too, as every other error is.
    if (err.exitCode !== 0 && asksForJson(argv)) printJson({ error: { code: 'invalid', message: err.message.replace(/^error: /, '') } });
  } finally {
    clearInterval(alive);
  }
}

/** Whether the command line asks for a JSON format (`--output json`, `--output=stream-json`), as far as it can be read when commander could not parse it. */
function asksForJson(argv: string[]): boolean {
  const args = argv.slice(2);
  const end = args.indexOf('--');
  for (const [i, arg] of (end < 0 ? args : args.slice(0, end)).entries()) {
    const value = arg === '--output' ? args[i + 1] : arg.startsWith('--output=') ? arg.slice('--output='.length) : undefined;
    if (value === 'json' || value === 'stream-json') return true;
  }
  return false;
}
