// Builds (or finds in the cache) what `tether cluster up` runs, printing what it does.
import { ensureClusterBinaries } from '../src/cluster/binaries.js';
import { findPostgres } from '../src/cluster/postgres.js';

const say = (message: string) => process.stderr.write(`ensure-cluster: ${message}\n`);
const bin = await ensureClusterBinaries(say);
const pg = await findPostgres();
say(`Temporal server ${bin.serverVersion} at ${bin.server}`);
say(`temporal-sql-tool at ${bin.sqlTool}, schema in ${bin.schemaDir}`);
say(`Temporal UI server ${bin.uiVersion} at ${bin.ui}`);
say(`PostgreSQL ${pg.version} in ${pg.binDir}${pg.runAs ? ` (runs as ${pg.runAs.name})` : ''}`);
