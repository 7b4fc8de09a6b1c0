/// The web console's script (docs/console.md): each view is drawn from the answers of the
/// server's documented APIs, requested with the console's session (its cookie, and its CSRF
/// token in `X-RecordSync-CSRF`). Every value from the server is set as text (`textContent`,
/// attribute values), never as HTML. Views are addressed by the URL's fragment (`#/users`), so
/// that the browser's back and forward buttons and links work.
enum ConsoleScript {
    static let script = #"""
        "use strict";
        (function () {
          const view = document.getElementById("view");
          const csrf = view.dataset.csrf;

          // An element: attributes (on… are listeners), then children (strings become text).
          function el(tag, attributes, ...children) {
            const element = document.createElement(tag);
            for (const [name, value] of Object.entries(attributes || {})) {
              if (value === null || value === undefined || value === false) { continue; }
              if (name === "class") { element.className = value; }
              else if (name.startsWith("on")) { element.addEventListener(name.slice(2), value); }
              else { element.setAttribute(name, value === true ? "" : String(value)); }
            }
            for (const child of children.flat(Infinity)) {
              if (child === null || child === undefined || child === false) { continue; }
              element.append(child instanceof Node ? child : String(child));
            }
            return element;
          }

          class APIError extends Error {
            constructor(code, reason, status) { super(reason); this.code = code; this.status = status; }
          }

          // A request of the server's APIs with the session; the JSON answer, or an APIError.
          async function api(method, path, body, headers) {
            const init = { method: method, credentials: "same-origin", cache: "no-store",
                           headers: Object.assign({ "X-RecordSync-CSRF": csrf }, headers || {}) };
            if (body !== undefined) { init.headers["Content-Type"] = "application/json"; init.body = JSON.stringify(body); }
            let response;
            try { response = await fetch(path, init); }
            catch (error) { throw new APIError("NETWORK", "the server did not answer (" + error.message + ")", 0); }
            const text = await response.text();
            let json = null;
            try { json = JSON.parse(text); } catch (error) { json = null; }
            if (!response.ok) {
              throw new APIError((json && json.serverErrorCode) || "HTTP " + response.status, (json && json.reason) || text.slice(0, 300), response.status);
            }
            return json;
          }

          // What went wrong and what to do about it.
          function failure(error) {
            const code = error.code || "ERROR";
            const todo = {
              AUTHENTICATION_FAILED: ["Your session ended. ", el("a", { href: "/console" }, "Sign in again"), "."],
              AUTHENTICATION_REQUIRED: ["Your session ended. ", el("a", { href: "/console" }, "Sign in again"), "."],
              ACCESS_DENIED: ["Your operator's scopes do not allow this: ask for an operator with the scope the reason names."],
              NETWORK: ["Check that the server is running, then reload the page."],
              THROTTLED: ["Wait a little, then try again."],
            }[code] || ["Check what the reason names and try again; if it keeps failing, the server's log has the request."];
            return el("div", { class: "error", role: "alert" }, el("strong", {}, code), ": ", error.message || String(error), el("br"), ...todo);
          }

          function date(milliseconds) {
            return milliseconds ? new Date(milliseconds).toLocaleString() : "";
          }

          // Shows a view: its title, then its content; the focus moves to it.
          function show(title, ...content) {
            document.title = title + " · RecordSync console";
            view.replaceChildren(el("h1", {}, title), ...content.flat(Infinity).filter((child) => child !== null && child !== undefined));
            view.focus({ preventScroll: true });
          }

          // A table of `rows` (arrays of cells: strings or elements) under `headings`, or
          // `empty` when there are none.
          function table(headings, rows, empty, numeric) {
            if (rows.length === 0) { return el("div", { class: "scroll" }, el("p", { class: "empty" }, empty)); }
            const isNumeric = (index) => (numeric || []).includes(index);
            const headed = headings.some((heading) => heading !== "");
            return el("div", { class: "scroll" }, el("table", {},
              headed ? el("thead", {}, el("tr", {}, headings.map((heading) => el("th", { scope: "col" }, heading)))) : null,
              el("tbody", {}, rows.map((row) => el("tr", {}, row.map((cell, index) => el("td", { class: isNumeric(index) ? "num" : null }, cell)))))));
          }

          function path(...parts) { return parts.map(encodeURIComponent).join("/"); }

          // MARK: Views

          // A view's address: `#/NAME?QUERY`.
          function href(name, parameters) {
            const query = new URLSearchParams();
            for (const [key, value] of Object.entries(parameters || {})) {
              if (value !== null && value !== undefined && value !== "") { query.set(key, String(value)); }
            }
            const text = query.toString();
            return "#/" + name + (text ? "?" + text : "");
          }

          function go(name, parameters) { location.hash = href(name, parameters); }

          // The database a view reads, as its address names it: container, environment,
          // database, the user acted as, and (in a zone) the zone and its owner.
          function where(query) {
            return { c: query.get("c"), e: query.get("e"), db: query.get("db"), as: query.get("as"), zone: query.get("zone"), owner: query.get("owner") };
          }

          function zoneID(context) {
            const zone = { zoneName: context.zone || "_defaultZone" };
            if (context.owner) { zone.ownerRecordName = context.owner; }
            return zone;
          }

          // A request of the database API, acting as the view's user.
          function database(context, endpoint, body) {
            return api("POST", "/database/1/" + path(context.c, context.e, context.db) + "/" + endpoint, body, { "X-RecordSync-Act-As": context.as });
          }

          function crumbs(context, ...last) {
            const parts = [el("a", { href: "#/data" }, "Data"), " › ", context.c + " (" + context.e + ")"];
            if (context.db) { parts.push(" › ", el("a", { href: href("zones", { c: context.c, e: context.e, db: context.db, as: context.as }) }, context.db + " as " + context.as)); }
            if (context.zone) { parts.push(" › ", el("a", { href: href("records", context) }, context.zone)); }
            for (const part of last) { parts.push(" › ", part); }
            return el("p", { class: "crumbs" }, parts);
          }

          async function data() {
            const answer = await api("GET", "/admin/1/containers");
            show("Data",
              el("p", { class: "crumbs" }, "Containers, in each environment something was saved in."),
              table(["Container", "Environment", ""],
                answer.containers.map((container) => [
                  el("a", { href: href("databases", { c: container.name, e: container.environment }) }, container.name),
                  container.environment,
                  el("a", { href: href("schema", { c: container.name, e: container.environment }) }, container.schemaLocked ? "Schema (locked)" : "Schema"),
                ]),
                "Nothing is stored yet: a container appears here once something is saved in it."));
          }

          // Reading a database is acting as a user: pick one, then the database.
          async function databases(query) {
            const context = where(query);
            const answer = await api("GET", "/admin/1/users");
            if (answer.users.length === 0) {
              show("Databases", crumbs(context), el("p", { class: "empty" }, "There are no users: each database is read as a user. 'recordserver user add NAME' makes one."));
              return;
            }
            const select = el("select", { id: "act-as", name: "as" }, answer.users.map((user) => el("option", { value: user.name, selected: user.name === context.as }, user.name)));
            const open = (kind) => (event) => { event.preventDefault(); go("zones", { c: context.c, e: context.e, db: kind, as: select.value }); };
            show("Databases", crumbs(context),
              el("p", {}, "Each database is read as a user, as that user reads it: the public database, their private one, or the zones shared with them."),
              el("form", { class: "row", onsubmit: open("private") },
                el("label", { for: "act-as" }, "Act as"), select,
                el("button", { type: "button", onclick: open("public") }, "Public database"),
                el("button", { type: "submit" }, "Private database"),
                el("button", { type: "button", onclick: open("shared") }, "Shared database")));
          }

          async function zones(query) {
            const context = where(query);
            const answer = await database(context, "zones/list", {});
            // The user's subscriptions in this database, as subscriptions/list answers them.
            let subscriptions;
            try { subscriptions = (await database(context, "subscriptions/list", {})).subscriptions || []; } catch (error) { subscriptions = error; }
            show("Zones", crumbs(context),
              table(["Zone", "Owner", "", ""], answer.zones.map((zone) => {
                const inZone = Object.assign({}, context, { zone: zone.zoneID.zoneName, owner: context.db === "shared" ? zone.zoneID.ownerRecordName : null });
                return [
                  el("a", { href: href("records", inZone) }, zone.zoneID.zoneName),
                  el("span", { class: "mono" }, zone.zoneID.ownerRecordName || ""),
                  el("a", { href: href("live", inZone) }, "Live changes"),
                  context.db === "private" && zone.zoneID.zoneName !== "_defaultZone" ? el("a", { href: href("records", Object.assign({}, inZone, { type: "cloudkit.share" })) }, "Shares") : "",
                ];
              }), context.db === "shared" ? "Nobody shares a zone with this user." : "No zones."),
              el("h2", {}, "Subscriptions"),
              subscriptions instanceof Error ? failure(subscriptions) :
                table(["ID", "Kind", "Zone", "Type", "Fires on"], subscriptions.map((sub) => [
                  el("span", { class: "mono" }, sub.subscriptionID), sub.subscriptionType,
                  sub.zoneID ? sub.zoneID.zoneName : "", sub.query ? sub.query.recordType : "", (sub.firesOn || []).join(", "),
                ]), context.as + " has no subscriptions in this database."));
          }

          // A field's value as text, or a link (references, assets).
          function value(context, field, short) {
            if (!field || field.value === null || field.value === undefined) { return ""; }
            const type = field.type || "";
            if (type.endsWith("_LIST") && Array.isArray(field.value)) {
              const items = field.value.slice(0, short ? 5 : 1000).map((item) => value(context, { value: item, type: type.slice(0, -5) }, short));
              const parts = [];
              items.forEach((item, index) => { if (index > 0) { parts.push(", "); } parts.push(item); });
              if (field.value.length > items.length) { parts.push(" … (" + field.value.length + ")"); }
              return el("span", {}, parts);
            }
            const v = field.value;
            switch (type) {
              case "TIMESTAMP": return date(v);
              case "REFERENCE":
                return el("a", { href: href("record", Object.assign({}, context, { name: v.recordName })) }, v.recordName);
              case "ASSETID": {
                // Downloaded as a file; previewed only when the server knows it for a raster
                // image (`?inline=1` answers anything else as an attachment, and the preview goes).
                const label = "asset, " + (v.size || 0) + " bytes";
                if (!v.downloadURL) { return label; }
                const url = v.downloadURL.replace("${f}", "asset");
                const link = el("a", { href: url, download: "" }, label);
                if (short) { return link; }
                const preview = el("img", { class: "preview", src: url + "?inline=1", alt: "preview of the asset",
                                            onerror: () => preview.remove() });
                return el("span", { class: "asset" }, link, preview);
              }
              case "LOCATION": return v.latitude + ", " + v.longitude;
              case "BYTES": return Math.floor(String(v).length * 3 / 4) + " bytes";
            }
            const text = typeof v === "object" ? JSON.stringify(v) : String(v);
            return short && text.length > 80 ? text.slice(0, 79) + "…" : text;
          }

          async function records(query) {
            const context = where(query);
            const schema = await api("GET", "/admin/1/" + path(context.c, context.e) + "/schema");
            const types = schema.recordTypes.filter((type) => !type.name.startsWith("cloudkit."));
            const type = query.get("type") || (types[0] && types[0].name);
            if (type === "cloudkit.share" && !types.some((t) => t.name === type)) { types.push({ name: type, fields: [] }); }
            if (!type) { show("Records", crumbs(context), el("p", { class: "empty" }, "The schema has no record types yet.")); return; }
            const fields = ((types.find((t) => t.name === type) || { fields: [] }).fields).map((f) => f.name);
            const sort = query.get("sort") || "___modTime", ascending = query.get("order") === "asc";
            const filter = query.get("where") || "";
            const base = Object.assign({}, context, { type: type, sort: query.get("sort"), order: query.get("order"), where: filter });
            const body = { zoneID: zoneID(context), resultsLimit: 50, continuationMarker: query.get("marker") || undefined,
                           query: { recordType: type, sortBy: [{ fieldName: sort, ascending: ascending }] } };
            if (filter) { body.query.recordSyncPredicate = filter; }
            const typeSelect = el("select", { id: "type", onchange: () => go("records", Object.assign({}, base, { type: typeSelect.value, sort: null, order: null, where: null })) },
              types.map((t) => el("option", { value: t.name, selected: t.name === type }, t.name)));
            const input = el("input", { id: "where", type: "search", value: filter, placeholder: "year > 1900 AND artist.name == 'Monet'", spellcheck: "false" });
            const controls = el("form", { class: "row", role: "search", onsubmit: (event) => { event.preventDefault(); go("records", Object.assign({}, base, { where: input.value.trim() })); } },
              el("label", { for: "type" }, "Type"), typeSelect,
              el("label", { for: "where" }, "Filter"), input, el("button", { type: "submit" }, "Filter"),
              el("a", { href: href("live", context), id: "live-link" }, "Live changes"));
            let answer;
            try {
              answer = await database(context, "records/query", body);
            } catch (error) {
              show("Records", crumbs(context), controls, failure(error));
              return;
            }
            // A column's heading sorts by it (again: the other way).
            const heading = (label, key) => el("button", { type: "button", class: "sort",
              "aria-sort": key === sort ? (ascending ? "ascending" : "descending") : null,
              onclick: () => go("records", Object.assign({}, base, { sort: key, order: key === sort && !ascending ? "asc" : "desc", marker: null })) },
              label + (key === sort ? (ascending ? " ▲" : " ▼") : ""));
            const columns = fields.slice(0, 8);
            const rows = answer.records.map((record) => [
              el("a", { href: href("record", Object.assign({}, context, { name: record.recordName })), class: "mono" }, record.recordName),
              ...columns.map((name) => value(context, record.fields[name], true)),
              date(record.modified && record.modified.timestamp),
            ]);
            const pages = [];
            if (query.get("marker")) { pages.push(el("a", { href: href("records", base) }, "First page")); }
            if (answer.continuationMarker) { pages.push(el("a", { href: href("records", Object.assign({}, base, { marker: answer.continuationMarker })) }, "Next page")); }
            show(type, crumbs(context, type), modeSwitch(), controls,
              editing() ? el("p", {}, el("button", { type: "button", id: "new", onclick: () => create(context, type, (types.find((t) => t.name === type) || { fields: [] }).fields) }, "New " + type + "…")) : null,
              table([heading("Record", "___recordID"), ...columns.map((name) => heading(name, name)), heading("Modified", "___modTime")], rows,
                filter ? "No record of this type matches the filter." : "No records of this type in this zone."),
              el("p", { class: "pages" }, pages));
          }

          // MARK: Editing

          // Whether the operator may write as users, and whether it switched this tab to editing.
          const scopes = (view.dataset.scopes || "").split(", ");
          const mayWrite = scopes.includes("write") || scopes.includes("all");
          function editing() { return mayWrite && sessionStorage.getItem("recordsync-editing") === "on"; }

          // The switch between reading and editing as the user, in a database's views.
          function modeSwitch() {
            if (!mayWrite) { return el("p", { class: "mode muted" }, "Read-only: editing needs an operator with the write scope."); }
            const on = editing();
            return el("p", { class: "mode" }, el("span", { class: on ? "tag editing" : "tag" }, on ? "Editing as the user" : "Read-only"), " ",
              el("button", { type: "button", class: "quiet", id: "mode", onclick: () => { sessionStorage.setItem("recordsync-editing", on ? "off" : "on"); route(); } },
                on ? "Stop editing" : "Switch to editing"));
          }

          // Asks to confirm `what` (elements) in a modal dialog; resolves true when confirmed.
          function confirmDialog(title, what, action) {
            return new Promise((resolve) => {
              const dialog = el("dialog", { "aria-labelledby": "dialog-title" });
              const finish = (answer) => { dialog.close(); dialog.remove(); resolve(answer); };
              dialog.append(el("h2", { id: "dialog-title" }, title), el("div", {}, what),
                el("form", { method: "dialog", class: "buttons" },
                  el("button", { type: "button", class: "quiet", onclick: () => finish(false) }, "Cancel"),
                  el("button", { type: "button", id: "confirm", class: action.startsWith("Delete") ? "danger" : null, onclick: () => finish(true) }, action)));
              dialog.addEventListener("cancel", () => finish(false));
              document.body.append(dialog);
              dialog.showModal();
            });
          }

          function pad(number, width) { return String(number).padStart(width || 2, "0"); }
          function localTime(milliseconds) {
            const d = new Date(milliseconds);
            return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + "T" + pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds()) + "." + pad(d.getMilliseconds(), 3);
          }

          // An input for a field of `type` holding `value` (undefined: none yet), and how to
          // read it back; `null` for a type the console does not edit (assets).
          function fieldInput(id, type, value) {
            const has = value !== undefined && value !== null;
            switch (type) {
              case "ASSETID": case "ASSETID_LIST": return null;
              case "STRING": {
                const input = el("textarea", { id: id, rows: has && String(value).length > 60 ? 4 : 1 });
                input.value = has ? value : "";
                return { input: input, read: () => input.value };
              }
              case "INT64": case "DOUBLE": {
                const input = el("input", { id: id, type: "number", step: type === "INT64" ? "1" : "any", value: has ? String(value) : "" });
                return { input: input, read: () => {
                  if (input.value.trim() === "") { return undefined; }
                  const number = Number(input.value);
                  if (!Number.isFinite(number) || (type === "INT64" && !Number.isInteger(number))) { throw new Error("is not " + (type === "INT64" ? "a whole number" : "a number")); }
                  return number;
                } };
              }
              case "TIMESTAMP": {
                const input = el("input", { id: id, type: "datetime-local", step: "0.001", value: has ? localTime(value) : "" });
                return { input: input, read: () => {
                  if (input.value === "") { return undefined; }
                  const time = new Date(input.value).getTime();
                  if (!Number.isFinite(time)) { throw new Error("is not a date and time"); }
                  return time;
                } };
              }
              case "REFERENCE": {
                const input = el("input", { id: id, type: "text", class: "mono", value: has ? value.recordName : "", spellcheck: "false", placeholder: "record name" });
                return { input: input, read: () => input.value.trim() === "" ? undefined
                  : Object.assign({}, has ? value : { action: "NONE" }, { recordName: input.value.trim() }) };
              }
              default: {
                const input = el("textarea", { id: id, class: "mono", rows: 2, placeholder: "JSON" });
                input.value = has ? JSON.stringify(value) : "";
                return { input: input, read: () => {
                  if (input.value.trim() === "") { return undefined; }
                  try { return JSON.parse(input.value); } catch (error) { throw new Error("is not JSON: " + error.message); }
                } };
              }
            }
          }

          // A form of `fields` ([{name, type, value}]), and the fields whose values changed
          // (`null` for one emptied), or an Error naming the field that does not read.
          function fieldEditor(fields) {
            const inputs = [];
            const rows = fields.map((field, index) => {
              const made = fieldInput("field-" + index, field.type, field.value);
              if (made) { inputs.push({ field: field, made: made }); }
              return [el("label", { for: "field-" + index, class: "mono" }, field.name), field.type, made ? made.input : el("span", { class: "muted" }, "not editable here")];
            });
            return {
              element: table(["Field", "Type", "Value"], rows, "The type has no fields yet."),
              changes: () => {
                const changed = {};
                for (const { field, made } of inputs) {
                  let next;
                  try { next = made.read(); } catch (error) { throw new Error(field.name + " " + error.message); }
                  if (JSON.stringify(next) === JSON.stringify(field.value)) { continue; }
                  if (next === undefined && field.value === undefined) { continue; }
                  changed[field.name] = next === undefined ? null : { value: next, type: field.type };
                }
                return changed;
              },
            };
          }

          // What a change list says, for a confirmation.
          function changeList(fields, changed) {
            const before = Object.fromEntries(fields.map((field) => [field.name, field]));
            return el("ul", {}, Object.entries(changed).map(([name, next]) => el("li", {}, el("span", { class: "mono" }, name), ": ",
              before[name] && before[name].value !== undefined ? value({}, before[name], true) : el("span", { class: "muted" }, "none"), " → ",
              next === null ? el("span", { class: "muted" }, "removed") : value({}, next, true))));
          }

          async function record(query, notice) {
            const context = where(query);
            const name = query.get("name");
            const answer = await database(context, "records/lookup", { zoneID: zoneID(context), records: [{ recordName: name }] });
            const found = answer.records[0];
            if (!found || found.serverErrorCode) {
              show(name, crumbs(context, name), modeSwitch(), failure({ code: found ? found.serverErrorCode : "NOT_FOUND", message: found ? found.reason : "no such record" }));
              return;
            }
            const links = await database(context, "records/backlinks", { zoneID: zoneID(context), recordName: name });
            const schema = editing() ? await api("GET", "/admin/1/" + path(context.c, context.e) + "/schema") : null;
            const who = (stamp) => stamp ? [date(stamp.timestamp), " by ", el("span", { class: "mono" }, stamp.userRecordName || "")] : "";
            const fieldNames = Object.keys(found.fields || {}).sort();
            let fieldsPart;
            const actions = [];
            if (editing()) {
              const known = ((schema.recordTypes.find((type) => type.name === found.recordType) || { fields: [] }).fields);
              const fields = known.map((field) => ({ name: field.name, type: field.type, value: found.fields[field.name] ? found.fields[field.name].value : undefined }));
              for (const name of fieldNames) { if (!known.some((field) => field.name === name)) { fields.push({ name: name, type: found.fields[name].type, value: found.fields[name].value }); } }
              const editor = fieldEditor(fields);
              const problem = el("div", { id: "edit-problem" });
              const save = async (event) => {
                event.preventDefault();
                problem.replaceChildren();
                let changed;
                try { changed = editor.changes(); } catch (error) { problem.replaceChildren(failure({ code: "BAD_REQUEST", message: error.message })); return; }
                if (Object.keys(changed).length === 0) { problem.replaceChildren(el("p", { class: "notice" }, "Nothing changed.")); return; }
                if (!await confirmDialog("Save " + name + "?", [el("p", {}, "As " + context.as + ", who will be its last modifier:"), changeList(fields, changed)], "Save changes")) { return; }
                const result = (await database(context, "records/modify", { zoneID: zoneID(context), operations: [{ operationType: "update",
                  record: { recordName: name, recordType: found.recordType, recordChangeTag: found.recordChangeTag, fields: changed } }] })).records[0];
                if (result.serverErrorCode === "CONFLICT") {
                  const theirs = result.serverRecord;
                  problem.replaceChildren(el("div", { class: "error", role: "alert" }, el("strong", {}, "CONFLICT"),
                    ": someone saved this record after you opened it" + (theirs && theirs.modified ? " (" + date(theirs.modified.timestamp) + ")" : "") + ", so your change was not saved. ",
                    "Load their version, then make your change again. ",
                    el("button", { type: "button", id: "reload", onclick: () => route() }, "Load their version")));
                  return;
                }
                if (result.serverErrorCode) { problem.replaceChildren(failure({ code: result.serverErrorCode, message: result.reason })); return; }
                await record(query, "Saved: change tag " + result.recordChangeTag + ".");
              };
              fieldsPart = el("form", { id: "edit", onsubmit: save }, editor.element, problem,
                el("p", { class: "buttons" }, el("button", { type: "submit", id: "save" }, "Save…")));
              actions.push(el("button", { type: "button", id: "delete", class: "danger", onclick: () => remove(context, found) }, "Delete…"));
            } else {
              fieldsPart = table(["Field", "Type", "Value"], fieldNames.map((field) => [
                el("span", { class: "mono" }, field), found.fields[field].type || "", el("div", { class: "value" }, value(context, found.fields[field], false)),
              ]), "No fields.");
            }
            show(name, crumbs(context, el("a", { href: href("records", Object.assign({}, context, { type: found.recordType })) }, found.recordType), name),
              modeSwitch(),
              notice ? el("p", { class: "notice", role: "status" }, notice) : null,
              el("h2", {}, "Fields"), fieldsPart,
              el("h2", {}, "System fields"),
              table(["", ""], [
                ["Type", found.recordType],
                ["Change tag", el("span", { class: "mono" }, found.recordChangeTag || "")],
                ["Created", who(found.created)],
                ["Modified", who(found.modified)],
                ["Share", found.share ? el("a", { href: href("record", Object.assign({}, context, { name: found.share.recordName })) }, found.share.recordName) : "none"],
              ], ""),
              found.participants || found.publicPermission ? [
                el("h2", {}, "Participants"),
                el("p", {}, "Public permission: ", found.publicPermission || "NONE", found.url ? [" · ", el("span", { class: "mono" }, found.url)] : ""),
                table(["Participant", "Type", "Permission", "Status"], (found.participants || []).map((one) => {
                  const identity = one.userIdentity || {}, lookup = identity.lookupInfo || {};
                  return [el("span", { class: "mono" }, identity.userRecordName || lookup.emailAddress || lookup.userRecordName || ""), one.type || "", one.permission || "", one.acceptanceStatus || ""];
                }), "No participants yet."),
              ] : null,
              el("h2", {}, "Referred to by"),
              table(["Record", "Field", "Action"], links.backlinks.map((link) => [
                el("a", { href: href("record", Object.assign({}, context, { name: link.recordName })), class: "mono" }, link.recordName),
                el("span", { class: "mono" }, link.fieldName), link.action,
              ]), "No record of this zone refers to this one."),
              links.continuationMarker ? el("p", { class: "muted" }, "More records refer to this one than shown.") : null,
              actions.length ? el("p", { class: "buttons" }, actions) : null);
          }

          // Deletes a record once its dry run has said what the cascade takes along.
          async function remove(context, found) {
            const operation = { operationType: "delete", record: { recordName: found.recordName, recordChangeTag: found.recordChangeTag } };
            const body = { zoneID: zoneID(context), operations: [operation] };
            const trial = (await database(context, "records/modify", Object.assign({ recordSyncDryRun: true }, body))).records[0];
            if (trial.serverErrorCode) { show(found.recordName, crumbs(context, found.recordName), failure({ code: trial.serverErrorCode, message: trial.reason })); return; }
            const cascaded = trial.cascadedRecordNames || [];
            const what = cascaded.length
              ? [el("p", {}, "Records whose DELETE_SELF references lead to it go with it: " + cascaded.length + " more."), el("ul", { class: "mono" }, cascaded.map((name) => el("li", {}, name)))]
              : [el("p", {}, "No other record goes with it.")];
            if (!await confirmDialog("Delete " + found.recordName + "?", what, "Delete " + (1 + cascaded.length) + (cascaded.length ? " records" : " record"))) { return; }
            const result = (await database(context, "records/modify", body)).records[0];
            if (result.serverErrorCode) {
              show(found.recordName, crumbs(context, found.recordName), failure({ code: result.serverErrorCode,
                message: result.reason + (result.serverErrorCode === "CONFLICT" ? " (someone saved it after you opened it: open it again before deleting)" : "") }));
              return;
            }
            location.hash = href("records", Object.assign({}, context, { type: found.recordType }));
          }

          // A new record of the records view's type, its fields from the schema.
          async function create(context, type, fields) {
            const editor = fieldEditor(fields.map((field) => ({ name: field.name, type: field.type, value: undefined })));
            const nameInput = el("input", { id: "new-name", type: "text", class: "mono", spellcheck: "false", placeholder: "left empty: a new UUID" });
            const problem = el("div", {});
            show("New " + type, crumbs(context, type, "new"), modeSwitch(),
              el("form", { id: "create", onsubmit: async (event) => {
                event.preventDefault();
                let changed;
                try { changed = editor.changes(); } catch (error) { problem.replaceChildren(failure({ code: "BAD_REQUEST", message: error.message })); return; }
                const recordName = nameInput.value.trim() || crypto.randomUUID();
                if (!await confirmDialog("Create " + recordName + "?", [el("p", {}, "As " + context.as + ", who will own it:"), changeList([], changed)], "Create record")) { return; }
                const result = (await database(context, "records/modify", { zoneID: zoneID(context), operations: [{ operationType: "create",
                  record: { recordName: recordName, recordType: type, fields: changed } }] })).records[0];
                if (result.serverErrorCode) { problem.replaceChildren(failure({ code: result.serverErrorCode, message: result.reason })); return; }
                location.hash = href("record", Object.assign({}, context, { name: recordName }));
              } },
                el("label", { for: "new-name" }, "Record name"), nameInput, editor.element, problem,
                el("p", { class: "buttons" }, el("button", { type: "submit", id: "save" }, "Create…"))));
          }

          // MARK: Live

          // The open push stream of the live view, ended when the view changes.
          let live = null;

          // A zone's changes as they commit: the zone's current token, then on each push for
          // the zone (the database's notification stream) its changes since, newest on top.
          async function liveView(query) {
            const context = where(query);
            const zone = zoneID(context);
            const found = (await database(context, "zones/lookup", { zones: [zone] })).zones[0];
            if (!found || found.serverErrorCode) { show("Live changes", crumbs(context, "live"), failure({ code: found ? found.serverErrorCode : "NOT_FOUND", message: found ? found.reason : "no such zone" })); return; }
            let token = found.syncToken;
            const status = el("p", { id: "live-status", class: "muted", role: "status" }, "Connecting…");
            const rows = el("tbody", { id: "live-rows" });
            const empty = el("p", { class: "empty" }, "No change yet: changes appear here as they commit.");
            show("Live changes", crumbs(context, "live"), status,
              el("div", { class: "scroll" }, el("table", {}, el("thead", {}, el("tr", {}, ["Seen", "Record", "Type", "Change", "Tag", "By"].map((h) => el("th", { scope: "col" }, h)))), rows), empty));
            const controller = new AbortController();
            live = controller;
            let reading = Promise.resolve();
            // Reads the changes since the token, one read at a time.
            const catchUp = () => {
              reading = reading.then(async () => {
                let page;
                do {
                  page = await database(context, "records/changes", { zoneID: zone, syncToken: token, resultsLimit: 200 });
                  token = page.syncToken;
                  const seen = new Date().toLocaleTimeString();
                  for (const change of page.records) {
                    empty.remove();
                    rows.prepend(el("tr", { class: "fresh" },
                      el("td", {}, seen),
                      el("td", {}, change.deleted ? el("span", { class: "mono" }, change.recordName) : el("a", { class: "mono", href: href("record", Object.assign({}, context, { name: change.recordName })) }, change.recordName)),
                      el("td", {}, change.recordType || ""),
                      el("td", {}, change.deleted ? "deleted" : "saved"),
                      el("td", { class: "mono" }, change.recordChangeTag || ""),
                      el("td", { class: "mono" }, change.modified ? change.modified.userRecordName : "")));
                  }
                } while (page.moreComing && !controller.signal.aborted);
              }).catch((error) => { status.replaceChildren(failure(error)); });
              return reading;
            };
            const listen = async () => {
              while (!controller.signal.aborted) {
                try {
                  const response = await fetch("/database/1/" + path(context.c, context.e, context.db) + "/notifications", { signal: controller.signal, cache: "no-store",
                    credentials: "same-origin", headers: { "X-RecordSync-CSRF": csrf, "X-RecordSync-Act-As": context.as } });
                  if (!response.ok || !response.body) { throw new APIError("HTTP " + response.status, "the push stream did not open", response.status); }
                  const reader = response.body.getReader();
                  const decoder = new TextDecoder();
                  let text = "";
                  status.textContent = "Listening: changes to " + (context.zone || "_defaultZone") + " appear as they commit.";
                  catchUp();
                  for (;;) {
                    const { value, done } = await reader.read();
                    if (done) { break; }
                    text += decoder.decode(value, { stream: true });
                    let end;
                    while ((end = text.indexOf("\n\n")) >= 0) {
                      const event = text.slice(0, end);
                      text = text.slice(end + 2);
                      const data = event.split("\n").find((line) => line.startsWith("data: "));
                      if (!event.startsWith("event: zones") || !data) { continue; }
                      const zones = JSON.parse(data.slice(6)).zones || [];
                      if (zones.some((z) => z.zoneName === zone.zoneName && (!zone.ownerRecordName || !z.ownerRecordName || z.ownerRecordName === zone.ownerRecordName))) { catchUp(); }
                    }
                  }
                } catch (error) {
                  if (controller.signal.aborted) { return; }
                  status.textContent = "The push stream closed (" + (error.message || error) + "); reconnecting…";
                }
                await new Promise((resolve) => setTimeout(resolve, 2000));
              }
            };
            listen();
          }

          // MARK: Health

          const SVG = "http://www.w3.org/2000/svg";
          function svg(tag, attributes, ...children) {
            const element = document.createElementNS(SVG, tag);
            for (const [name, value] of Object.entries(attributes || {})) { if (value !== null && value !== undefined) { element.setAttribute(name, String(value)); } }
            for (const child of children.flat(Infinity)) { if (child !== null && child !== undefined) { element.append(child instanceof Node ? child : String(child)); } }
            return element;
          }

          function clock(minute) {
            const d = new Date(minute * 60000);
            return pad(d.getHours()) + ":" + pad(d.getMinutes());
          }

          // A round top for an axis: 1, 2 or 5 times a power of ten, at least `value`.
          function ceiling(value) {
            if (!(value > 0)) { return 1; }
            const power = Math.pow(10, Math.floor(Math.log10(value)));
            for (const step of [1, 2, 5, 10]) { if (step * power >= value) { return step * power; } }
            return 10 * power;
          }

          // A line chart (SVG) of `series` ([{label, values}], a value per minute, null: none).
          function lineChart(title, minutes, series, format) {
            // As wide as the view allows (a phone's is narrower), so that its text stays legible.
            const width = Math.min(640, Math.max(300, Math.floor(view.clientWidth) - 60)), height = 180, left = 64, right = 14, top = 14, bottom = 26;
            const values = series.flatMap((line) => line.values).filter((value) => value !== null && value !== undefined);
            const top_ = ceiling(Math.max(0, ...values));
            const x = (index) => left + (minutes.length <= 1 ? 0 : index * (width - left - right) / (minutes.length - 1));
            const y = (value) => top + (height - top - bottom) * (1 - value / top_);
            const grid = [0, top_ / 2, top_].map((value) => [
              svg("line", { x1: left, x2: width - right, y1: y(value), y2: y(value), class: "grid" }),
              svg("text", { x: left - 6, y: y(value) + 4, class: "axis", "text-anchor": "end" }, format(value)),
            ]);
            const ticks = minutes.length ? [0, Math.floor((minutes.length - 1) / 2), minutes.length - 1].map((index) =>
              svg("text", { x: x(index), y: height - 6, class: "axis", "text-anchor": index === 0 ? "start" : index === minutes.length - 1 ? "end" : "middle" }, clock(minutes[index]))) : [];
            const known = (value) => value !== null && value !== undefined;
            const lines = series.map((line, number) => {
              let d = "", drawing = false;
              const dots = [];
              line.values.forEach((value, index) => {
                if (!known(value)) { drawing = false; return; }
                d += (drawing ? " L" : " M") + x(index).toFixed(1) + " " + y(value).toFixed(1);
                drawing = true;
                // A value alone between gaps is a dot: a path of one point draws nothing.
                if (!known(line.values[index - 1]) && !known(line.values[index + 1])) { dots.push(svg("circle", { cx: x(index).toFixed(1), cy: y(value).toFixed(1), r: 3.5, class: "dot s" + (number % 6) })); }
              });
              return [d ? svg("path", { d: d.trim(), class: "line s" + (number % 6) }) : null, dots];
            });
            const latest = series.map((line) => {
              const known = line.values.filter((value) => value !== null && value !== undefined);
              return line.label + " " + (known.length ? format(known[known.length - 1]) : "none");
            }).join(", ");
            return el("figure", { class: "chart" },
              el("figcaption", {}, title),
              svg("svg", { viewBox: "0 0 " + width + " " + height, role: "img", "aria-label": title + ": latest " + latest }, grid, ticks, lines),
              el("ul", { class: "legend" }, series.map((line, number) => el("li", {}, el("span", { class: "swatch s" + (number % 6) }), line.label))));
          }

          async function health() {
            const [metrics, ready] = await Promise.all([
              api("GET", "/admin/1/metrics?minutes=60"),
              fetch("/healthz", { cache: "no-store" }).then((response) => response.json().then((json) => ({ ok: response.ok, json: json }))).catch((error) => ({ ok: false, json: { reason: error.message } })),
            ]);
            const minutes = metrics.minutes.map((minute) => minute.minute);
            const perSecond = metrics.minutes.map((minute, index) => {
              // The current minute is still being counted: its rate so far.
              const seconds = index === metrics.minutes.length - 1 ? Math.max(1, (metrics.now / 1000) % 60) : 60;
              return minute.requests / seconds;
            });
            const codes = {};
            for (const minute of metrics.minutes) { for (const [code, count] of Object.entries(minute.errors)) { codes[code] = (codes[code] || 0) + count; } }
            const topCodes = Object.entries(codes).sort((a, b) => b[1] - a[1]).slice(0, 6).map((entry) => entry[0]);
            const number = (value) => value >= 100 ? String(Math.round(value)) : value >= 10 ? value.toFixed(1) : value.toFixed(2).replace(/\.?0+$/, "") || "0";
            const ms = (micros) => number(micros / 1000) + " ms";
            const byMinute = {};
            for (const sample of metrics.storage) { byMinute[sample.minute] = sample; }
            const charts = [
              lineChart("Requests per second", minutes, [{ label: "all nodes", values: perSecond }], number),
              lineChart("Errors by code (per minute)", minutes, topCodes.length ? topCodes.map((code) => ({ label: code, values: metrics.minutes.map((minute) => minute.errors[code] || 0) }))
                : [{ label: "no errors", values: metrics.minutes.map(() => 0) }], number),
              ...metrics.endpoints.slice(0, 4).map((endpoint) => lineChart("Latency of " + endpoint.endpoint.replace("/database/1/{container}/{environment}/{database}/", "…/")
                + " (" + endpoint.requests + " requests)", minutes,
                [{ label: "p50", values: endpoint.p50 }, { label: "p99", values: endpoint.p99 }], ms)),
              lineChart("Records stored", minutes, [{ label: "records", values: minutes.map((minute) => byMinute[minute] ? byMinute[minute].records : null) }], number),
              lineChart("Bytes stored", minutes, [{ label: "bytes", values: minutes.map((minute) => byMinute[minute] ? byMinute[minute].bytes : null) }], bytes),
            ];
            show("Health",
              el("p", { class: ready.ok ? "notice" : "error", role: "status" }, ready.ok ? "This node is ready: its store answers (/healthz)." : "This node is not ready: " + (ready.json.reason || "its store does not answer") + "."),
              el("h2", {}, "Nodes"),
              table(["Node", "Started", "Last seen"], metrics.nodes.map((node) => [el("span", { class: "mono" }, node.name), date(node.startedAt),
                new Date(node.seenAt).toLocaleTimeString()]), "No node has noted itself yet (each does within fifteen seconds of starting)."),
              el("h2", {}, "The last hour"),
              el("p", { class: "muted" }, "From every node's own figures, kept a day. Latencies are the upper bounds of histogram buckets (each twice the last, from 0.25 ms)."),
              el("div", { class: "charts" }, charts),
              el("h2", {}, "Backups"),
              el("p", {}, "On SQLite: ", el("code", {}, "recordserver data backup --data DIR --to FILE.tar"), " takes one consistent snapshot while the server runs, its assets included; ",
                el("code", {}, "recordserver data restore --from FILE.tar --data DIR"), " brings it back with the servers stopped. On PostgreSQL the whole state is the database: ",
                el("code", {}, "pg_dump --format=custom"), ", then after a restore every zone starts a new history as docs/deploying.md says. Every table is carried: records, users, console sessions, the request log, the charts' figures and the audit log (docs/deploying.md, Backups)."));
          }

          // MARK: The request log

          async function requests(query) {
            const filters = {};
            for (const name of ["user", "path", "status", "code"]) { if (query.get(name)) { filters[name] = query.get(name); } }
            const answer = await api("GET", "/admin/1/requests?" + new URLSearchParams(Object.assign({ limit: "200" }, filters)).toString());
            const input = (name, label, placeholder, size) => [el("label", { for: "log-" + name }, label),
              el("input", { id: "log-" + name, name: name, type: "search", value: filters[name] || "", placeholder: placeholder, size: size, spellcheck: "false" })];
            const form = el("form", { class: "row", role: "search", onsubmit: (event) => {
              event.preventDefault();
              const given = {};
              for (const name of ["user", "path", "status", "code"]) { given[name] = document.getElementById("log-" + name).value.trim(); }
              if (href("requests", given) === location.hash) { route(); } else { go("requests", given); }
            } },
              input("user", "User", "name or record name", 14), input("path", "Path", "records/modify", 14), input("status", "Status", "4 or 409", 6),
              input("code", "Error", "CONFLICT", 12), el("button", { type: "submit" }, "Filter"));
            const ms = (micros) => (micros / 1000).toFixed(micros < 10000 ? 2 : 0);
            show("Request log",
              el("p", { class: "crumbs" }, "The newest requests of every node (the latest 200 that match), newest first; this node is ", el("span", { class: "mono" }, answer.node), "."),
              form,
              table(["When", "Request", "User", "Method", "Path", "Status", "Error", "ms", "Node"], answer.requests.map((entry) => [
                new Date(entry.at).toLocaleTimeString(),
                el("span", { class: "mono" }, entry.requestID),
                entry.userName ? el("a", { href: href("requests", Object.assign({}, filters, { user: entry.userName })) }, entry.userName + (entry.operatorName ? " (" + entry.operatorName + ")" : ""))
                  : (entry.operatorName ? entry.operatorName : el("span", { class: "muted" }, "none")),
                entry.method,
                el("span", { class: "mono wrap" }, entry.path),
                el("span", { class: entry.status >= 400 ? "status bad" : "status" }, String(entry.status)),
                entry.errorCode ? el("span", { class: "mono" }, entry.errorCode) : "",
                ms(entry.micros),
                el("span", { class: "mono small" }, entry.node),
              ]), "No request matches.", [7]));
          }

          // MARK: Schema

          // A text answer of the APIs (the schema file).
          async function apiText(path) {
            const response = await fetch(path, { credentials: "same-origin", cache: "no-store", headers: { "X-RecordSync-CSRF": csrf } });
            const text = await response.text();
            if (!response.ok) {
              let json = null;
              try { json = JSON.parse(text); } catch (error) { json = null; }
              throw new APIError((json && json.serverErrorCode) || "HTTP " + response.status, (json && json.reason) || text.slice(0, 300), response.status);
            }
            return text;
          }

          // A plan's changes, each with its effect on a deploy.
          function planTable(plan, empty) {
            return table(["Change", "On a deploy"], plan.changes.map((change) => [
              el("span", { class: "mono wrap" }, change.change),
              el("span", { class: "effect " + change.effect }, { adds: "adds", tightens: "takes away: needs confirming", refused: "refused: would lose data" }[change.effect] || change.effect),
            ]), empty);
          }

          async function schema(query) {
            const container = query.get("c"), environment = query.get("e") === "production" ? "production" : "development";
            const base = "/admin/1/" + path(container, environment) + "/schema";
            const [answer, file] = await Promise.all([api("GET", base), apiText(base + "?format=ckdb")]);
            const mayChange = scopes.includes("schema") || scopes.includes("all");
            const other = environment === "development" ? "production" : "development";
            const sections = answer.recordTypes.map((type) => [
              el("h3", {}, type.name),
              table(["Field", "Type"], type.fields.map((field) => [el("span", { class: "mono" }, field.name), field.type]), "No fields yet."),
            ]);
            const lifecycle = el("div", { id: "lifecycle" });
            show("Schema of " + container,
              el("p", { class: "crumbs" }, el("a", { href: "#/data" }, "Data"), " › ", container, " › ", environment, " · ",
                el("a", { href: href("schema", { c: container, e: other }) }, other)),
              lifecycle,
              el("h2", {}, "Record types"),
              sections.length ? sections : el("p", { class: "empty" }, "No record types yet."),
              el("h2", {}, "As a schema file"),
              el("p", { class: "muted" }, "Fields with their indexes, grants and roles, in CloudKit's schema language (what cktool exports)."),
              el("pre", { class: "schema-file", tabindex: "0" }, file),
              el("h2", {}, "History"),
              el("div", { id: "history" }, el("p", { class: "muted" }, "Loading…")));
            if (mayChange) { await (environment === "production" ? deployPanel(lifecycle, container) : resetPanel(lifecycle, container)); }
            const history = await api("GET", base + "/history?limit=50");
            document.getElementById("history").replaceChildren(table(["When", "Environment", "Operator", "Action", "What changed"], history.history.map((entry) => [
              date(entry.at), entry.environment, entry.operatorName, entry.action, el("span", { class: "mono wrap" }, entry.summary),
            ]), "No import, deploy, reset or lock yet."));
          }

          // Production: what deploying development's schema changes, and the deploy.
          async function deployPanel(into, container) {
            const base = "/admin/1/" + path(container, "production") + "/schema";
            const plan = await api("GET", base + "/diff");
            const result = el("div", { id: "deploy-result" });
            const deploy = async () => {
              result.replaceChildren();
              const tightens = plan.changes.some((change) => change.effect === "tightens");
              const what = [el("p", {}, "Production's schema becomes development's, and stays locked:"), planTable(plan, "")];
              if (!await confirmDialog("Deploy to production?", what, "Deploy")) { return; }
              try {
                const done = await api("POST", base + "/deploy" + (tightens ? "?confirm=true" : ""));
                await schema(new URLSearchParams({ c: container, e: "production" }));
                document.getElementById("lifecycle").prepend(el("p", { class: "notice", role: "status" }, "Deployed: " + done.changes.length + " change" + (done.changes.length === 1 ? "" : "s") + "."));
              } catch (error) {
                result.replaceChildren(failure(error));
              }
            };
            into.replaceChildren(el("h2", {}, "Deploy from development"),
              ...(plan.changes.length === 0 ? [el("p", { class: "muted" }, "Production's schema is development's: nothing to deploy.")]
                : [planTable(plan, ""), el("p", { class: "buttons" }, el("button", { type: "button", id: "deploy", onclick: deploy }, "Deploy…")), result]));
          }

          // Development: resetting it to production's schema, with what the reset deletes.
          async function resetPanel(into, container) {
            const base = "/admin/1/" + path(container, "development") + "/schema";
            const result = el("div", { id: "reset-result" });
            const reset = async () => {
              result.replaceChildren();
              let plan;
              try { plan = await api("POST", base + "/reset?dryRun=true"); } catch (error) { result.replaceChildren(failure(error)); return; }
              const what = [el("p", {}, "Development's schema becomes production's."), planTable(plan, "No change to the schema.")];
              if (plan.recordCount > 0) {
                what.push(el("p", {}, plan.recordCount + " development record" + (plan.recordCount === 1 ? "" : "s") + " of what production lacks will be deleted:"),
                  el("ul", { class: "mono" }, plan.records.slice(0, 50).map((record) => el("li", {}, record.recordType + " " + record.recordName + " (" + record.database + ")"))));
              }
              if (!await confirmDialog("Reset development?", what, plan.recordCount > 0 ? "Delete and reset" : "Reset")) { return; }
              try {
                await api("POST", base + "/reset");
                await schema(new URLSearchParams({ c: container, e: "development" }));
              } catch (error) {
                result.replaceChildren(failure(error));
              }
            };
            into.replaceChildren(el("h2", {}, "Reset"),
              el("p", { class: "muted" }, "Make development's schema production's again; development's records of what production lacks are deleted (you see which first)."),
              el("p", { class: "buttons" }, el("button", { type: "button", id: "reset", class: "quiet", onclick: reset }, "Reset development…")), result);
          }

          // MARK: Users

          const mayManageUsers = scopes.includes("users") || scopes.includes("all");

          // A token just issued: shown once, with a button copying it.
          function issued(answer) {
            const value = el("code", { id: "issued-token", class: "secret" }, answer.token);
            return el("div", { class: "notice", role: "status" },
              el("p", {}, "Token ", el("strong", {}, answer.tokenName), " of ", answer.name, ". It is shown this once: copy it now (the server keeps only its hash)."),
              value, " ",
              el("button", { type: "button", class: "quiet", onclick: async (event) => {
                try { await navigator.clipboard.writeText(answer.token); event.target.textContent = "Copied"; } catch (error) { event.target.textContent = "Select it and copy"; }
              } }, "Copy"));
          }

          function bytes(count) {
            if (count < 1024) { return count + " B"; }
            const units = ["KB", "MB", "GB", "TB"];
            let value = count, unit = -1;
            do { value /= 1024; unit += 1; } while (value >= 1024 && unit < units.length - 1);
            return value.toFixed(value < 10 ? 1 : 0) + " " + units[unit];
          }

          // Usage against a quota (none: no limit).
          function meter(used, limit, format) {
            if (limit === null || limit === undefined) { return [format(used), el("span", { class: "muted" }, " (no quota)")]; }
            const share = limit > 0 ? Math.min(1, used / limit) : 1;
            return el("span", { class: "meter-line" }, el("meter", { min: "0", max: String(limit), value: String(used), high: String(limit * 0.9), "aria-label": "used" }),
              " " + format(used) + " of " + format(limit) + " (" + Math.round(share * 100) + "%)");
          }

          async function users(query, notice) {
            const answer = await api("GET", "/admin/1/users");
            const result = el("div", { id: "create-result" });
            const name = el("input", { id: "new-user", type: "text", required: true, spellcheck: "false", autocomplete: "off", size: 16 });
            const create = mayManageUsers ? el("form", { class: "row", onsubmit: async (event) => {
              event.preventDefault();
              result.replaceChildren();
              try {
                const made = await api("POST", "/admin/1/users/create", { name: name.value.trim() });
                await users(query, issued(made));
              } catch (error) { result.replaceChildren(failure(error)); }
            } }, el("label", { for: "new-user" }, "New user"), name, el("button", { type: "submit", id: "create-user" }, "Create")) : null;
            show("Users", notice || null, create, result,
              table(["Name", "User record name", "Signs in with", "Tokens", "Since"],
                answer.users.map((user) => [
                  mayManageUsers ? el("a", { href: href("user", { name: user.name }) }, user.name) : user.name,
                  el("span", { class: "mono" }, user.userRecordName),
                  user.signsInWith.length ? user.signsInWith.join(", ") : el("span", { class: "muted" }, "tokens only"),
                  String(user.tokens), date(user.createdAt),
                ]), "No users yet.", [3]));
          }

          async function user(query, notice) {
            const name = query.get("name");
            const detail = await api("GET", "/admin/1/users/detail?" + new URLSearchParams({ name: name }).toString());
            const result = el("div", { id: "token-result" });
            const revoke = (tokenName) => async () => {
              if (!await confirmDialog("Revoke " + tokenName + "?", [el("p", {}, "The token " + tokenName + " of " + name + " stops working on every node within a second; the app holding it signs in again.")], "Revoke token")) { return; }
              try {
                await api("POST", "/admin/1/users/tokens/revoke", { name: name, tokenName: tokenName });
                await user(query, el("p", { class: "notice", role: "status" }, "Revoked " + tokenName + "."));
              } catch (error) { result.replaceChildren(failure(error)); }
            };
            const tokenName = el("input", { id: "token-name", type: "text", spellcheck: "false", placeholder: "token-N", size: 14 });
            const days = el("input", { id: "token-days", type: "number", min: "1", max: "3650", placeholder: "never", size: 6 });
            const issue = el("form", { class: "row", onsubmit: async (event) => {
              event.preventDefault();
              result.replaceChildren();
              const body = { name: name };
              if (tokenName.value.trim()) { body.tokenName = tokenName.value.trim(); }
              if (days.value) { body.days = Number(days.value); }
              try { await user(query, issued(await api("POST", "/admin/1/users/tokens/create", body))); } catch (error) { result.replaceChildren(failure(error)); }
            } }, el("label", { for: "token-name" }, "Name"), tokenName, el("label", { for: "token-days" }, "Days"), days,
              el("button", { type: "submit", id: "issue-token" }, "Issue a token"));
            const done = (text) => el("p", { class: "notice", role: "status" }, text);
            const keyName = el("input", { id: "key-name", type: "text", spellcheck: "false", placeholder: "key-N", size: 14 });
            const pem = el("textarea", { id: "key-pem", rows: "4", spellcheck: "false", placeholder: "-----BEGIN PUBLIC KEY-----" });
            const addKey = el("form", { class: "stack", onsubmit: async (event) => {
              event.preventDefault();
              result.replaceChildren();
              const body = { name: name, publicKeyPEM: pem.value.trim() };
              if (keyName.value.trim()) { body.keyName = keyName.value.trim(); }
              try { await user(query, done("Added the key " + (await api("POST", "/admin/1/users/keys/add", body)).keyID + ".")); } catch (error) { result.replaceChildren(failure(error)); }
            } }, el("label", { for: "key-pem" }, "A P-256 public key (PEM)"), pem,
              el("span", { class: "row" }, el("label", { for: "key-name" }, "Name"), keyName, el("button", { type: "submit", id: "add-key" }, "Add the key")));
            const revokeKey = (keyName) => async () => {
              if (!await confirmDialog("Revoke " + keyName + "?", [el("p", {}, "Requests signed with the key " + keyName + " of " + name + " are refused from the next one on.")], "Revoke key")) { return; }
              try {
                await api("POST", "/admin/1/users/keys/revoke", { name: name, keyName: keyName });
                await user(query, done("Revoked the key " + keyName + "."));
              } catch (error) { result.replaceChildren(failure(error)); }
            };
            const source = el("input", { id: "link-source", type: "text", spellcheck: "false", autocomplete: "off", size: 16 });
            const link = el("form", { class: "row", onsubmit: async (event) => {
              event.preventDefault();
              result.replaceChildren();
              const other = source.value.trim();
              if (!await confirmDialog("Link " + other + " into " + name + "?", [el("p", {}, "The identities and password of " + other + " move to " + name + ", who signs in with them from now on; the tokens of " + other + " stop working. Delete " + other + " once nothing of their data is wanted.")], "Link")) { return; }
              try {
                const moved = await api("POST", "/admin/1/users/link", { name: name, source: other });
                await user(query, done("Moved " + moved.identities + " sign-in" + (moved.identities === 1 ? "" : "s") + (moved.account ? " and the password" : "") + " of " + other + " into " + name + "."));
              } catch (error) { result.replaceChildren(failure(error)); }
            } }, el("label", { for: "link-source" }, "User"), source, el("button", { type: "submit", id: "link-user" }, "Link…"));
            const remove = async () => {
              let trial;
              try { trial = await api("POST", "/admin/1/users/delete?dryRun=true", { name: name }); } catch (error) { result.replaceChildren(failure(error)); return; }
              const what = [el("p", {}, "Deleting " + name + " removes, in one transaction:"), el("ul", {},
                el("li", {}, trial.databases + " private database" + (trial.databases === 1 ? "" : "s") + " (one per container and environment used), with their " + trial.zones + " zone" + (trial.zones === 1 ? "" : "s") + " and every record in them"),
                el("li", {}, trial.assets + " asset" + (trial.assets === 1 ? "" : "s") + " only those held"),
                el("li", {}, detail.tokens.length + " token" + (detail.tokens.length === 1 ? "" : "s") + ", " + detail.identities.length + " linked sign-in" + (detail.identities.length === 1 ? "" : "s") + ", " + detail.serverKeys.length + " server key" + (detail.serverKeys.length === 1 ? "" : "s") + ", subscriptions, and their requests in the request log")),
                el("p", {}, "Records they created in public databases stay, naming them as creator.")];
              if (!await confirmDialog("Delete " + name + "?", what, "Delete user")) { return; }
              try {
                await api("POST", "/admin/1/users/delete", { name: name });
                location.hash = "#/users";
              } catch (error) { result.replaceChildren(failure(error)); }
            };
            show(name,
              el("p", { class: "crumbs" }, el("a", { href: "#/users" }, "Users"), " › ", name, " · ", el("span", { class: "mono" }, detail.userRecordName)),
              notice || null, result,
              el("h2", {}, "Storage"),
              table(["", ""], [["Records", meter(detail.usage.records, detail.quota.records, String)], ["Bytes", meter(detail.usage.bytes, detail.quota.bytes, bytes)]], ""),
              el("h2", {}, "Signing in"),
              el("p", {}, detail.signsInWith.length ? "With " + detail.signsInWith.join(", ") + "." : "With tokens an operator issued only."),
              table(["Provider", "Email", "Linked"], detail.identities.map((identity) => [identity.provider,
                identity.email ? identity.email + (identity.emailVerified ? "" : " (unverified)") : "", date(identity.createdAt)]), "No identity provider linked."),
              el("h2", {}, "Tokens"),
              el("p", { class: "muted" }, "Each device or app signed in holds one: its session."),
              table(["Name", "Issued", "Ends", ""], detail.tokens.map((token) => [el("span", { class: "mono" }, token.name), date(token.createdAt),
                token.expiresAt ? date(token.expiresAt) : "never", el("button", { type: "button", class: "quiet", "data-token": token.name, onclick: revoke(token.name) }, "Revoke…")]), "No tokens."),
              issue,
              el("h2", {}, "Server-to-server keys"),
              table(["Key ID", "Name", "Added", ""], detail.serverKeys.map((key) => [el("span", { class: "mono" }, key.id), key.name, date(key.createdAt),
                el("button", { type: "button", class: "quiet", "data-key": key.name, onclick: revokeKey(key.name) }, "Revoke…")]), "No keys."),
              addKey,
              el("h2", {}, "Link another user"),
              el("p", { class: "muted" }, "When one person ended up as two users: move the other's identities and password into " + name + ". Their tokens stop working; their data stays with them."),
              link,
              el("h2", {}, "Delete"),
              el("p", { class: "buttons" }, el("button", { type: "button", id: "delete-user", class: "danger", onclick: remove }, "Delete " + name + "…")));
          }

          // A secret or token shown once, with a button copying it.
          function shownOnce(id, what, secret) {
            return el("div", { class: "notice", role: "status" }, el("p", {}, what, " It is shown this once: copy it now (the server keeps only its hash)."),
              el("code", { id: id, class: "secret" }, secret), " ",
              el("button", { type: "button", class: "quiet", onclick: async (event) => {
                try { await navigator.clipboard.writeText(secret); event.target.textContent = "Copied"; } catch (error) { event.target.textContent = "Select it and copy"; }
              } }, "Copy"));
          }

          const signUpModes = { closed: "closed: users come from an operator, tokens or identity providers", invitation: "by invitation: whoever holds a code from recordserver account invite, with an address they verify",
                                open: "open: anyone with an address they verify" };

          async function access(query, notice) {
            const all = scopes.includes("all");
            const answer = await api("GET", "/admin/1/access");
            const operators = all ? (await api("GET", "/admin/1/operators")).operators : null;
            const result = el("div", { id: "access-result" });
            const attempt = (work) => async (event) => {
              if (event) { event.preventDefault(); }
              result.replaceChildren();
              try { await work(); } catch (error) { result.replaceChildren(failure(error)); }
            };
            const revokeToken = (token) => attempt(async () => {
              if (!await confirmDialog("Revoke " + token.name + "?", [el("p", {}, "Pages using the API token " + token.name + " of " + token.container + " (" + token.environment + ") are refused within a second, and their visitors can no longer sign in through it.")], "Revoke API token")) { return; }
              await api("POST", "/admin/1/apitokens/revoke", { name: token.name, container: token.container, environment: token.environment });
              await access(query, el("p", { class: "notice", role: "status" }, "Revoked " + token.name + "."));
            });
            const revokeOperator = (name) => attempt(async () => {
              if (!await confirmDialog("Revoke " + name + "?", [el("p", {}, "The operator " + name + " is refused from its next request on, and its console sessions end.")], "Revoke operator")) { return; }
              await api("POST", "/admin/1/operators/revoke", { name: name });
              await access(query, el("p", { class: "notice", role: "status" }, "Revoked " + name + "."));
            });
            const field = (id, label, attributes) => [el("label", { for: id }, label), el("input", Object.assign({ id: id, type: "text", spellcheck: "false", autocomplete: "off" }, attributes))];
            const value = (id) => document.getElementById(id).value.trim();
            const tokenForm = all ? el("form", { class: "row", onsubmit: attempt(async () => {
              const body = { container: value("token-container"), environment: document.getElementById("token-environment").value,
                             origins: value("token-origins").split(/[\s,]+/).filter((origin) => origin) };
              if (value("token-label")) { body.name = value("token-label"); }
              if (value("token-callback")) { body.signInCallback = value("token-callback"); }
              const made = await api("POST", "/admin/1/apitokens/create", body);
              await access(query, shownOnce("issued-api-token", "API token " + made.name + " of " + made.container + " (" + made.environment + ").", made.token));
            }) }, field("token-container", "Container", { required: true, size: 18, placeholder: "iCloud.com.example.app" }),
              el("label", { for: "token-environment" }, "Environment"), el("select", { id: "token-environment" }, el("option", {}, "development"), el("option", {}, "production")),
              field("token-label", "Name", { size: 12, placeholder: "api-token-N" }), field("token-origins", "Origins", { size: 22, placeholder: "https://example.com" }),
              field("token-callback", "Sign-in callback", { size: 22, placeholder: "none: Post Message" }),
              el("button", { type: "submit", id: "create-api-token" }, "Issue an API token")) : null;
            const scopeBoxes = ["read", "write", "schema", "users", "all"].map((scope) =>
              el("label", { class: "check" }, el("input", { type: "checkbox", name: "scope", value: scope }), " " + scope));
            const operatorForm = all ? el("form", { class: "row", onsubmit: attempt(async () => {
              const chosen = Array.from(document.querySelectorAll("input[name=scope]:checked")).map((box) => box.value);
              const made = await api("POST", "/admin/1/operators/create", { name: value("operator-name"), scopes: chosen });
              await access(query, shownOnce("issued-secret", "The secret of " + made.name + " (" + made.scopes.join(", ") + ").", made.secret));
            }) }, field("operator-name", "Operator", { required: true, size: 14 }), scopeBoxes, el("button", { type: "submit", id: "create-operator" }, "Add an operator")) : null;
            show("Access", notice || null, result,
              el("h2", {}, "Signing up"),
              el("p", {}, "Sign-up is " + (signUpModes[answer.signUp] || answer.signUp) + " (recordserver serve --sign-up)."),
              el("h2", {}, "Identity providers"),
              table(["Provider", "Web sign-in page"], answer.providers.map((provider) => [provider.name, provider.web ? "offered" : "apps only"]),
                "None: users sign in with a password account or tokens an operator issues (recordserver serve --identity-providers FILE)."),
              el("h2", {}, "API tokens"),
              el("p", { class: "muted" }, "What web pages and apps send to reach a container: signed-out visitors read its public database, and the sign-in page sends users back to the callback, or to the opening window (Post Message) without one."),
              table(["Name", "Container", "Environment", "Origins", "Sign-in", "Issued", ""], answer.apiTokens.map((token) => [
                el("span", { class: "mono" }, token.name), token.container, token.environment, token.origins.length ? token.origins.join(" ") : el("span", { class: "muted" }, "none"),
                token.signInCallback ? el("span", { class: "mono" }, token.signInCallback) : "Post Message", date(token.createdAt),
                all ? el("button", { type: "button", class: "quiet", "data-api-token": token.name, onclick: revokeToken(token) }, "Revoke…") : "",
              ]), "No API tokens."),
              tokenForm,
              all ? [el("h2", {}, "Operators"),
                table(["Operator", "Scopes", "Since", ""], operators.map((one) => [one.name, one.scopes.join(", "), date(one.createdAt),
                  one.name === view.dataset.operator ? el("span", { class: "muted" }, "you") : el("button", { type: "button", class: "quiet", "data-operator": one.name, onclick: revokeOperator(one.name) }, "Revoke…")]), ""),
                operatorForm] : el("p", { class: "muted" }, "Operators are listed to operators holding the scope all."));
          }

          async function audit() {
            const answer = await api("GET", "/admin/1/audit?limit=200");
            show("Audit log",
              el("p", { class: "crumbs" }, "What operators did, newest first (the latest 200)."),
              table(["When", "Operator", "Action", "On"],
                answer.entries.map((entry) => [date(entry.at), entry.operator, el("span", { class: "mono" }, entry.action), entry.target]),
                "Nothing yet."));
          }

          const views = { data: data, databases: databases, zones: zones, records: records, record: record, live: liveView, schema: schema, users: users,
                          user: user, access: access, requests: requests, health: health, audit: audit };
          // The link of the views' list each view belongs under.
          const sections = { databases: "data", zones: "data", records: "data", record: "data", live: "data", schema: "data", user: "users" };

          async function route() {
            if (live) { live.abort(); live = null; }
            const hash = location.hash.startsWith("#/") ? location.hash : "#/data";
            const [name, text] = hash.slice(2).split("?");
            const section = "#/" + (sections[name] || name);
            for (const link of document.querySelectorAll("nav a")) {
              if (link.getAttribute("href") === section) { link.setAttribute("aria-current", "page"); } else { link.removeAttribute("aria-current"); }
            }
            const handler = views[name];
            if (!handler) {
              show("No such view", el("p", {}, "The console has no view at this address. ", el("a", { href: "#/data" }, "Go to the data"), "."));
              return;
            }
            try {
              await handler(new URLSearchParams(text || ""));
            } catch (error) {
              show("Something went wrong", failure(error));
            }
          }

          window.addEventListener("hashchange", route);
          route();
        })();

        """#
}
