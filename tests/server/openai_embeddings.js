// Drives POST /v1/embeddings of `forge serve` (an embedding model) with the official `openai` npm
// client (server_openai_embeddings_test.cc): node openai_embeddings.js PORT API_KEY [MODULE]:
// MODULE is the package to load ("openai" or "openai-latest"). Prints one JSON line of results;
// exits 1 on any error.
const [port, apiKey, moduleName] = process.argv.slice(2);
const loaded = require(moduleName || 'openai');
const OpenAI = loaded.OpenAI || loaded.default || loaded;

// Little-endian float32 values of a base64 string, decoded here (not by the client).
function decode(text) {
  const buf = Buffer.from(text, 'base64');
  const view = new DataView(buf.buffer, buf.byteOffset, buf.length);
  const out = [];
  for (let i = 0; i + 4 <= buf.length; i += 4) out.push(view.getFloat32(i, true));
  return out;
}

async function main() {
  const client = new OpenAI({baseURL: `http://127.0.0.1:${port}/v1`, apiKey, maxRetries: 0});
  const model = (await client.models.list()).data[0].id;
  const texts = ['Once upon a time', 'The cat sat on the mat'];
  // Without encoding_format the client asks for base64 and decodes it itself.
  const plain = await client.embeddings.create({model, input: texts[0]});
  const floats = await client.embeddings.create({model, input: texts, encoding_format: 'float'});
  const b64 = await client.embeddings.create({model, input: texts, encoding_format: 'base64'});
  const short = await client.embeddings.create(
      {model, input: texts[1], dimensions: 8, encoding_format: 'float'});
  const shortDefault = await client.embeddings.create({model, input: [texts[1]], dimensions: 8});
  let rejected = null;
  try {
    await client.embeddings.create({model, input: ['a', '']});
  } catch (e) {
    rejected = {status: e.status, param: e.param};
  }
  let completion = null;
  try {
    await client.completions.create({model, prompt: 'a', max_tokens: 2});
  } catch (e) {
    completion = {status: e.status, param: e.param};
  }
  console.log(JSON.stringify({
    model,
    object: floats.object,
    indexes: floats.data.map((d) => d.index),
    plain: Array.from(plain.data[0].embedding),
    floats: floats.data.map((d) => d.embedding),
    base64_strings: b64.data.every((d) => typeof d.embedding === 'string'),
    base64: b64.data.map((d) => decode(d.embedding)),
    short: short.data[0].embedding,
    short_default: Array.from(shortDefault.data[0].embedding),
    usage: floats.usage,
    rejected,
    completion,
  }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
