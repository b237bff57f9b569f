// Checks holdfast's REST answers against Flink's own REST contract, read
// from Flink's classes at run time (the jar of PyPI's apache-flink-libraries
// on the class path): Flink's OpenAPI description is generated from the same
// MessageHeaders classes this program reads.
//
// Input, one answer per line on stdin: METHOD PATH STATUS FILE, where FILE
// holds the body holdfast answered. For each answer it finds Flink's
// MessageHeaders for METHOD and PATH (`:name` segments match any segment),
// then checks:
//   - a 2xx status is the one Flink answers with;
//   - an error (4xx, 5xx) body is Flink's ErrorResponseBody ({"errors": [...]});
//   - a 2xx body parses as Flink's response class (scalars not coerced, no
//     null for a primitive), and every field Flink writes when it serialises
//     what was parsed is in holdfast's answer with the same value: a missing,
//     renamed or mistyped field fails. Fields Flink does not know are allowed.
// A Java-serialized failure (`serialized-throwable`) must deserialize into a
// SerializedThrowable whose message is in the answer's `stack-trace`.
// Prints "ok METHOD PATH" (with " extra=A,B" naming the fields of the answer
// that Flink's class does not know, for the caller to judge) or
// "FAIL METHOD PATH: why" per line; exits 1 if any failed, 2 if the input or
// the jar is unusable.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

import org.apache.flink.runtime.rest.messages.ErrorResponseBody;
import org.apache.flink.runtime.rest.util.RestMapperUtils;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.DeserializationFeature;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JavaType;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.cfg.CoercionAction;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;

public class FlinkContract {
    record Route(String method, String[] segments, String name, JavaType response, int status) {}

    public static void main(String[] args) throws Exception {
        ObjectMapper base = RestMapperUtils.getStrictObjectMapper();
        ObjectMapper reader = base.copy()
                .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
                .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES);
        reader.coercionConfigDefaults()
                .setCoercion(CoercionInputShape.String, CoercionAction.Fail)
                .setCoercion(CoercionInputShape.Integer, CoercionAction.Fail)
                .setCoercion(CoercionInputShape.Float, CoercionAction.Fail)
                .setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail);
        List<Route> routes = routes(reader, args[0]);
        if (routes.isEmpty()) {
            System.err.println("no MessageHeaders found in " + args[0]);
            System.exit(2);
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        int failed = 0;
        int checked = 0;
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            String[] parts = line.trim().split(" ", 4);
            if (parts.length != 4) {
                System.err.println("bad input line: " + line);
                System.exit(2);
            }
            String what = parts[0] + " " + parts[1];
            String why;
            java.util.TreeSet<String> extra = new java.util.TreeSet<>();
            try {
                why = check(reader, routes, parts[0], parts[1], Integer.parseInt(parts[2]),
                        Files.readString(Path.of(parts[3])), extra);
            } catch (Exception e) {
                why = e.toString();
            }
            checked++;
            if (why == null) {
                System.out.println("ok " + what + (extra.isEmpty() ? "" : " extra=" + String.join(",", extra)));
            } else {
                failed++;
                System.out.println("FAIL " + what + ": " + why.replace('\n', ' '));
            }
        }
        System.out.println(checked + " checked, " + failed + " failed");
        System.exit(failed == 0 && checked > 0 ? 0 : 1);
    }

    static String check(ObjectMapper mapper, List<Route> routes, String method, String path,
            int status, String body, java.util.Set<String> extra) throws Exception {
        String bare = path.split("\\?", 2)[0];
        if (bare.startsWith("/v1/")) bare = bare.substring(3);
        Route route = null;
        for (Route r : routes) {
            if (r.method.equals(method) && matches(r.segments, bare.split("/"))) {
                if (route == null || literals(r.segments) > literals(route.segments)) route = r;
            }
        }
        JsonNode ours = mapper.readTree(body);
        if (status >= 400) {
            // Every error, on any path, is Flink's error body.
            ErrorResponseBody error = mapper.treeToValue(ours, ErrorResponseBody.class);
            if (error.errors == null || error.errors.isEmpty()) return "an error without errors";
            return null;
        }
        if (route == null) return "Flink has no such route";
        if (status != route.status) {
            return "status " + status + " where Flink's " + route.name + " answers " + route.status;
        }
        if (route.response == null) return null;
        Object parsed = mapper.readValue(mapper.treeAsTokens(ours), route.response);
        JsonNode flinks = mapper.valueToTree(parsed);
        String why = same(flinks, ours, "$", route.name);
        if (why == null) why = throwables(ours, "$");
        extras(flinks, ours, extra);
        return why;
    }

    /** The fields of `ours` that Flink's re-serialization (`flinks`) has not. */
    static void extras(JsonNode flinks, JsonNode ours, java.util.Set<String> out) {
        if (flinks == null || ours == null) return;
        if (flinks.isObject() && ours.isObject()) {
            for (Iterator<String> it = ours.fieldNames(); it.hasNext();) {
                String key = it.next();
                if (!flinks.has(key)) out.add(key);
                else extras(flinks.get(key), ours.get(key), out);
            }
        } else if (flinks.isArray() && ours.isArray()) {
            for (int i = 0; i < Math.min(flinks.size(), ours.size()); i++) extras(flinks.get(i), ours.get(i), out);
        }
    }

    /** Each `serialized-throwable` in `ours` deserializes, with its message in `stack-trace`. */
    static String throwables(JsonNode ours, String at) throws Exception {
        if (ours.isObject()) {
            JsonNode serialized = ours.get("serialized-throwable");
            if (serialized != null) {
                Object read = org.apache.flink.util.InstantiationUtil.deserializeObject(
                        java.util.Base64.getDecoder().decode(serialized.asText()),
                        ClassLoader.getSystemClassLoader());
                if (!(read instanceof org.apache.flink.util.SerializedThrowable)) {
                    return at + ".serialized-throwable is a " + read.getClass().getName();
                }
                String message = ((Throwable) read).getMessage();
                String trace = ours.path("stack-trace").asText();
                if (message == null || !trace.contains(message)) {
                    return at + ".serialized-throwable says " + message + " where stack-trace says " + trace;
                }
            }
            for (Iterator<Map.Entry<String, JsonNode>> it = ours.fields(); it.hasNext();) {
                Map.Entry<String, JsonNode> field = it.next();
                String why = throwables(field.getValue(), at + "." + field.getKey());
                if (why != null) return why;
            }
        } else if (ours.isArray()) {
            for (int i = 0; i < ours.size(); i++) {
                String why = throwables(ours.get(i), at + "[" + i + "]");
                if (why != null) return why;
            }
        }
        return null;
    }

    /** Every field of what Flink writes (`flinks`) is in `ours` with the same value. */
    static String same(JsonNode flinks, JsonNode ours, String at, String name) {
        if (flinks == null || flinks.isNull()) return null;
        // Raw JSON Flink writes as it was given (a plan's properties).
        if (ours != null && !flinks.isContainerNode() && flinks.toString().equals(ours.toString())) return null;
        if (ours == null || ours.isMissingNode()) return at + " is missing (Flink's " + name + " writes " + abbreviate(flinks) + ")";
        if (flinks.isObject()) {
            if (!ours.isObject()) return at + " is not an object";
            for (Iterator<Map.Entry<String, JsonNode>> it = flinks.fields(); it.hasNext();) {
                Map.Entry<String, JsonNode> field = it.next();
                // A Java-serialized object: Flink's JVM writes it again in
                // its own way; that Flink could read it is what counts.
                if (field.getKey().equals("serialized-throwable") && ours.path(field.getKey()).isTextual()) continue;
                String why = same(field.getValue(), ours.path(field.getKey()), at + "." + field.getKey(), name);
                if (why != null) return why;
            }
            return null;
        }
        if (flinks.isArray()) {
            if (!ours.isArray()) return at + " is not an array";
            if (flinks.size() != ours.size()) return at + " has " + ours.size() + " items where Flink reads " + flinks.size();
            for (int i = 0; i < flinks.size(); i++) {
                String why = same(flinks.get(i), ours.get(i), at + "[" + i + "]", name);
                if (why != null) return why;
            }
            return null;
        }
        if (flinks.isNumber() && ours.isNumber()) {
            return flinks.decimalValue().compareTo(ours.decimalValue()) == 0 ? null
                    : at + " is " + ours + " where Flink reads " + flinks;
        }
        if (flinks.getNodeType() != ours.getNodeType() || !flinks.asText().equals(ours.asText())) {
            return at + " is " + abbreviate(ours) + " where Flink writes " + abbreviate(flinks);
        }
        return null;
    }

    static String abbreviate(JsonNode node) {
        String text = node.toString();
        return text.length() > 120 ? text.substring(0, 120) + "…" : text;
    }

    static boolean matches(String[] template, String[] path) {
        if (template.length != path.length) return false;
        for (int i = 0; i < template.length; i++) {
            if (!template[i].startsWith(":") && !template[i].equals(path[i])) return false;
        }
        return true;
    }

    static int literals(String[] template) {
        int n = 0;
        for (String s : template) if (!s.startsWith(":")) n++;
        return n;
    }

    /** A headers class's one instance: getInstance(), INSTANCE, or a new one. */
    static Object instance(Class<?> c) throws Exception {
        try {
            return c.getMethod("getInstance").invoke(null);
        } catch (NoSuchMethodException e) {
            // Some keep it in a field, some are made with `new`.
        }
        try {
            return c.getField("INSTANCE").get(null);
        } catch (NoSuchFieldException e) {
            // Made with `new`.
        }
        try {
            return c.getConstructor().newInstance();
        } catch (NoSuchMethodException e) {
            return null;
        }
    }

    /** Every MessageHeaders class in the jar's REST packages. */
    static List<Route> routes(ObjectMapper mapper, String jar) throws Exception {
        List<Route> routes = new ArrayList<>();
        try (JarFile file = new JarFile(jar)) {
            for (Enumeration<JarEntry> e = file.entries(); e.hasMoreElements();) {
                String entry = e.nextElement().getName();
                if (!entry.startsWith("org/apache/flink/runtime/") || !entry.endsWith("Headers.class")
                        || entry.contains("$")) continue;
                Class<?> c;
                Object headers;
                try {
                    c = Class.forName(entry.replace('/', '.').replace(".class", ""));
                    if (Modifier.isAbstract(c.getModifiers())) continue;
                    headers = instance(c);
                } catch (Throwable t) {
                    continue;
                }
                if (headers == null) continue;
                String url = (String) c.getMethod("getTargetRestEndpointURL").invoke(headers);
                String method = c.getMethod("getHttpMethod").invoke(headers).toString();
                JavaType response = null;
                int status = 200;
                try {
                    Class<?> raw = (Class<?>) c.getMethod("getResponseClass").invoke(headers);
                    @SuppressWarnings("unchecked")
                    java.util.Collection<Class<?>> params =
                            (java.util.Collection<Class<?>>) c.getMethod("getResponseTypeParameters").invoke(headers);
                    response = params.isEmpty() ? mapper.getTypeFactory().constructType(raw)
                            : mapper.getTypeFactory().constructParametricType(raw, params.toArray(new Class<?>[0]));
                    Object code = c.getMethod("getResponseStatusCode").invoke(headers);
                    Method codeMethod = code.getClass().getMethod("code");
                    status = (Integer) codeMethod.invoke(code);
                    if (raw.getSimpleName().equals("EmptyResponseBody")) response = null;
                } catch (NoSuchMethodException untyped) {
                    // A file download (logs): no JSON body to check.
                }
                routes.add(new Route(method, url.split("/"), c.getSimpleName(), response, status));
            }
        }
        return routes;
    }
}
