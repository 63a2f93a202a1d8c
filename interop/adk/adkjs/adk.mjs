// Drives the artifact services of ADK JS (@google/adk, pinned by
// package-lock.json) for agentstore's interop tests (package interop/adk):
//
//   node adk.mjs gcs BUCKET   GcsArtifactService; ADK_GCS_ENDPOINT must name
//                             the emulator (http://host:port), given to the
//                             storage client as its apiEndpoint (with
//                             STORAGE_EMULATOR_HOST instead, the Node client
//                             would send JSON API calls to /b/... without the
//                             /storage/v1 the emulator serves them under)
//   node adk.mjs file ROOT    FileArtifactService rooted at ROOT
//
// One JSON operation a line on stdin, one JSON result a line on stdout, in
// order, until stdin ends (the protocol of interop/adk/adkgo):
//
//   {"op":"save","app","user","session","name",
//    "text" | "data"(base64)+"mime"["display_name"] | "file_uri"["file_mime"],
//    "metadata"?}                           -> {"version"}
//   {"op":"load",...,"name","version"?}     -> {"data","mime","is_text","display_name","file_uri"}
//                                              or {"not_found":true}
//   {"op":"list",...}                       -> {"names"}  (listArtifactKeys)
//   {"op":"versions",...,"name"}            -> {"versions"}  (listVersions)
//   {"op":"artifact_versions",...,"name"}   -> {"metas"}  (listArtifactVersions)
//   {"op":"get",...,"name","version"?}      -> {"meta":{"version","mime","custom_metadata","canonical_uri"}}
//                                              or {"not_found":true}
//   {"op":"delete",...,"name"}              -> {}  (every version: the only delete ADK JS has)
//
// A failed operation answers {"error":"..."} and the next line is read.
// The library's log lines go to stderr, never into the results.
import { createInterface } from 'node:readline';
import { FileArtifactService, GcsArtifactService, setLogger } from '@google/adk';

const [kind, where] = process.argv.slice(2);
if (!['gcs', 'file'].includes(kind) || !where || process.argv.length !== 4) {
  process.stderr.write('usage: node adk.mjs gcs BUCKET | node adk.mjs file ROOT\n');
  process.exit(2);
}
const endpoint = process.env.ADK_GCS_ENDPOINT;
if (kind === 'gcs' && !endpoint) {
  process.stderr.write('adk.mjs: ADK_GCS_ENDPOINT is not set; it only talks to an emulator\n');
  process.exit(2);
}
delete process.env.STORAGE_EMULATOR_HOST;

const toStderr = (level) => (...m) => process.stderr.write(`${level}: ${m.map(String).join(' ')}\n`);
setLogger({
  log: (level, ...m) => toStderr(String(level))(...m),
  debug: toStderr('debug'),
  info: toStderr('info'),
  warn: toStderr('warn'),
  error: toStderr('error'),
});

const svc = kind === 'gcs' ? new GcsArtifactService(where, { apiEndpoint: endpoint }) : new FileArtifactService(where);

function key(req) {
  return { appName: req.app, userId: req.user, sessionId: req.session };
}

function partOf(req) {
  const given = ['text', 'data', 'file_uri'].filter((k) => req[k] !== undefined);
  if (given.length !== 1) {
    throw new Error(`a save takes exactly one of text, data and file_uri, got ${given.length}`);
  }
  if (req.text !== undefined) {
    return { text: req.text };
  }
  if (req.data !== undefined) {
    const inlineData = { data: req.data, mimeType: req.mime };
    if (req.display_name !== undefined) {
      inlineData.displayName = req.display_name;
    }
    return { inlineData };
  }
  return { fileData: { fileUri: req.file_uri, mimeType: req.file_mime } };
}

function metaOf(v) {
  return {
    version: v.version,
    mime: v.mimeType,
    custom_metadata: v.customMetadata,
    canonical_uri: v.canonicalUri,
  };
}

async function run(req) {
  const k = key(req);
  switch (req.op) {
    case 'save':
      return {
        version: await svc.saveArtifact({
          ...k,
          filename: req.name,
          artifact: partOf(req),
          customMetadata: req.metadata,
        }),
      };
    case 'load': {
      const p = await svc.loadArtifact({ ...k, filename: req.name, version: req.version ?? undefined });
      if (p === undefined) {
        return { not_found: true };
      }
      if (p.text !== undefined) {
        return { data: Buffer.from(p.text, 'utf-8').toString('base64'), is_text: true };
      }
      if (p.fileData) {
        return { file_uri: p.fileData.fileUri, mime: p.fileData.mimeType };
      }
      return { data: p.inlineData.data ?? '', mime: p.inlineData.mimeType, display_name: p.inlineData.displayName };
    }
    case 'list':
      return { names: await svc.listArtifactKeys(k) };
    case 'versions':
      return { versions: await svc.listVersions({ ...k, filename: req.name }) };
    case 'artifact_versions':
      return { metas: (await svc.listArtifactVersions({ ...k, filename: req.name })).map(metaOf) };
    case 'get': {
      const v = await svc.getArtifactVersion({ ...k, filename: req.name, version: req.version ?? undefined });
      return v === undefined ? { not_found: true } : { meta: metaOf(v) };
    }
    case 'delete':
      await svc.deleteArtifact({ ...k, filename: req.name });
      return {};
    default:
      throw new Error(`unknown op ${JSON.stringify(req.op)}`);
  }
}

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  let res;
  try {
    res = await run(JSON.parse(line));
  } catch (e) {
    res = { error: String(e && e.stack ? e.stack : e) };
  }
  process.stdout.write(JSON.stringify(res) + '\n');
}
