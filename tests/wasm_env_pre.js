// Pre-js of the wasm core tests: node's STAGEMEM_* environment variables become the program's
// (Emscripten gives a wasm program a fixed environment of its own), so the property sweep's
// STAGEMEM_PROPERTY_SEED and STAGEMEM_PROPERTY_CONFIGS work under node as they do natively.
var Module = typeof Module !== "undefined" ? Module : {};
Module["preRun"] = (Module["preRun"] || []).concat([function () {
  if (typeof process === "undefined" || !process.env) return;
  for (var name in process.env) {
    if (name.indexOf("STAGEMEM_") === 0) ENV[name] = process.env[name];
  }
}]);
