/**
 * Preloaded by the command into Playwright's runner and workers: V8's code cache for Playwright's
 * own bundles (some 10 MB of JavaScript each process compiles at start), kept beside them in
 * node_modules/.cache. It saves about a fifth of a second of CPU per process, which a run pays
 * once for its runner and once per worker. Node 22 has it built in (module.enableCompileCache);
 * on Node 20 and 21 the compile step of those files reads and writes the cache instead. Whatever
 * fails takes Node's own path. CONFORMANCE_CODE_CACHE names another folder; `off` turns it off.
 */
'use strict';
const Module = require('node:module');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');

const BUNDLES = /[\\/]node_modules[\\/](playwright|playwright-core)[\\/]lib[\\/]/;
const STATE = Symbol.for('stop-session-conformance.code-cache');

function folder() {
  const chosen = process.env.CONFORMANCE_CODE_CACHE;
  if (chosen) return chosen === 'off' ? undefined : path.resolve(chosen);
  try {
    const nodeModules = path.resolve(require.resolve('playwright-core/package.json'), '..', '..');
    return path.join(nodeModules, '.cache', 'stop-session-conformance', `v8-${process.version}-${process.arch}`);
  } catch {
    return undefined;
  }
}

/** What a module's own `require` offers (Node's makeRequireFunction), for a module compiled here. */
function requireOf(module) {
  const require = (id) => module.require(id);
  require.resolve = (request, options) => Module._resolveFilename(request, module, false, options);
  require.resolve.paths = (request) => Module._resolveLookupPaths(request, module);
  require.main = process.mainModule;
  require.extensions = Module._extensions;
  require.cache = Module._cache;
  return require;
}

function install(dir, state) {
  const compile = Module.prototype._compile;
  const unwritten = [];
  // At exit, the code compiled by then (lazily compiled functions included) is what the cache keeps.
  process.once('exit', () => {
    for (const { file, script } of unwritten) {
      try {
        fs.mkdirSync(dir, { recursive: true });
        fs.writeFileSync(`${file}.${process.pid}`, script.createCachedData());
        fs.renameSync(`${file}.${process.pid}`, file);
      } catch {
        // a cache that cannot be written is only slower
      }
    }
  });
  Module.prototype._compile = function (content, filename, ...rest) {
    if (!BUNDLES.test(filename) || content.length < 16_384 || content.startsWith('#!')) return compile.call(this, content, filename, ...rest);
    const file = path.join(dir, crypto.createHash('sha1').update(filename).update('\0').update(content).digest('hex'));
    let script;
    let cachedData;
    try {
      cachedData = fs.existsSync(file) ? fs.readFileSync(file) : undefined;
      script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${content}\n})`, {
        filename,
        cachedData,
        importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
      });
    } catch {
      return compile.call(this, content, filename, ...rest);
    }
    if (cachedData && !script.cachedDataRejected) state.hits += 1;
    else (state.misses += 1), unwritten.push({ file, script });
    return script.runInThisContext().call(this.exports, this.exports, requireOf(this), this, filename, path.dirname(filename));
  };
}

const dir = folder();
if (dir && !globalThis[STATE]) {
  const state = (globalThis[STATE] = { dir, hits: 0, misses: 0, builtIn: typeof Module.enableCompileCache === 'function' });
  if (state.builtIn) Module.enableCompileCache(dir);
  else if (vm.constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER) install(dir, state);
}
