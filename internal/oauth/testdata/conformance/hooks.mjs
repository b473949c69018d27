// Node module hooks that let the conformance suite run on Node 20 (Debian's).
// Its bundle imports fs.globSync (Node 22+) for the tier-check command only,
// which the tests never run; the import is dropped so the module links.
export async function load(url, context, nextLoad) {
  const r = await nextLoad(url, context);
  if (url.includes('/@modelcontextprotocol/conformance/dist/') && r.source) {
    const s = r.source.toString().replace(/globSync as \w+,/, '');
    return { ...r, source: s };
  }
  return r;
}
