// Bundles the compiled CLI (dist/cli/main.js) with the packages every verb
// loads into one CommonJS file, so bin/tether.js can start it from V8's code
// cache (bin/code-cache.js). Loading @temporalio/client and its protobuf
// descriptors module by module cost a `tether list` ~150 ms of resolving,
// compiling and ESM/CommonJS interop before it sent its first request.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { build } from 'esbuild';

/**
 * The packages bundled, with everything they import in turn. Every other
 * package stays external, loaded by Node as usual, so a package that finds
 * its own files on disk, keeps per-process state shared with the worker
 * (@temporalio/activity, @temporalio/worker) or is native runs as it does
 * without the bundle.
 */
const BUNDLED = new Set(['@temporalio/client', '@temporalio/common', '@temporalio/proto', 'commander', 'zod']);

const packageOf = (specifier) =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

/** Bare imports from Tether's own code are bundled only for the packages above; imports inside a bundled package always are. */
const onlyBundledPackages = {
  name: 'only-bundled-packages',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, ({ path: specifier, importer }) => {
      if (specifier.startsWith('node:') || importer.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
      return BUNDLED.has(packageOf(specifier)) ? undefined : { path: specifier, external: true };
    });
  },
};

/**
 * Each module keeps the `import.meta.url` of its own file in dist/, so paths
 * it resolves beside itself (the workflows, the panel's assets, the project
 * root) are the ones the unbundled build resolves.
 */
function ownModuleUrls(bundleDir) {
  return {
    name: 'own-module-urls',
    setup(b) {
      b.onLoad({ filter: /\.js$/ }, async ({ path: file }) => {
        if (file.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
        const source = await readFile(file, 'utf8');
        const relative = JSON.stringify(path.relative(bundleDir, file));
        return { contents: source.replaceAll('import.meta.url', `__tetherModuleUrl(${relative})`), loader: 'js' };
      });
    },
  };
}

/**
 * Writes `outfile`, a CommonJS module whose `main(argv)` runs the CLI.
 * @param {string} entry dist/cli/main.js
 * @param {string} outfile
 */
export async function bundleCli(entry, outfile) {
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    minify: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    legalComments: 'none',
    logLevel: 'warning',
    banner: {
      js: "const __tetherModuleUrl = (file) => require('node:url').pathToFileURL(require('node:path').join(__dirname, file)).href;",
    },
    plugins: [onlyBundledPackages, ownModuleUrls(path.dirname(outfile))],
  });
}
