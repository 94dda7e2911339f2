// Finds the Temporal CLI or installs it into .tether/, printing what it does.
import { findTemporalCli } from '../src/server/temporal-cli.js';

const cli = await findTemporalCli({ log: (message) => process.stderr.write(`setup: ${message}\n`) });
process.stderr.write(`setup: Temporal CLI at ${cli}\n`);
