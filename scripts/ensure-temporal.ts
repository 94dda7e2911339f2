// Finds the Temporal CLI or installs it into .tether/, printing what it does and, once, where it is.
import { findTemporalCli } from '../src/server/temporal-cli.js';

let told = false;
const cli = await findTemporalCli({
  log: (message) => {
    told ||= message.startsWith('Temporal CLI ready');
    process.stderr.write(`setup: ${message}\n`);
  },
});
if (!told) process.stderr.write(`setup: Temporal CLI at ${cli}\n`);
