// Tokenizes texts with the Hugging Face tokenizers library, as model2vec
// does (no special tokens added): reads {"tokenizer": path, "texts": [...]}
// as JSON on stdin and writes the token ids of each text as a JSON array.
const { Tokenizer } = require('tokenizers');

let input = '';
process.stdin.on('data', (d) => { input += d; });
process.stdin.on('end', async () => {
  const req = JSON.parse(input);
  const tok = Tokenizer.fromFile(req.tokenizer);
  const out = [];
  for (const text of req.texts) {
    const enc = await tok.encode(text, null, { addSpecialTokens: false });
    out.push(enc.getIds());
  }
  process.stdout.write(JSON.stringify(out));
});
