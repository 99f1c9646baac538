// Reference values for mixed_iceberg.format.javahash, computed by real Java.
//
// Amoro buckets a row by PrimaryKeyData.hashCode():
//     h = Math.abs(java.util.Arrays.hashCode(pkTuple)); h == Integer.MIN_VALUE ? Integer.MAX_VALUE : h
// where pkTuple holds the values Iceberg's InternalRecordWrapper / Flink RowDataWrapper return:
// Integer (int, date days, tinyint, smallint), Long (long, time/timestamp micros), String,
// Boolean, Float, Double, BigDecimal, ByteBuffer (binary, fixed), java.util.UUID.
//
// How the expected values in test_javahash.py were produced (JDK 17.0.15):
//     javac -d /tmp/jhv JavaHashVectors.java && java -cp /tmp/jhv JavaHashVectors
// which prints one `"name": hash,` line per case of the fixed table below.
//
// With an argument, `java -cp /tmp/jhv JavaHashVectors keys.txt` reads one key per line and
// prints its hash; test_javahash.py uses this mode to cross-check random keys. A line is a
// comma-separated list of `tag:payload` fields:
//     n:            null                      i:<int>       Integer
//     l:<long>      Long                      b:true|false  Boolean
//     s:<hex>       String from UTF-8 hex     y:<hex>       ByteBuffer over the bytes
//     d:<unscaled>:<scale>  BigDecimal        u:<uuid>      java.util.UUID
//     f:<int bits>  Float.intBitsToFloat      g:<long bits> Double.longBitsToDouble

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

public class JavaHashVectors {
  private static final OffsetDateTime EPOCH = OffsetDateTime.of(1970, 1, 1, 0, 0, 0, 0, ZoneOffset.UTC);

  // Same as org.apache.amoro.data.PrimaryKeyData.hashCode().
  static int amoroHash(Object[] key) {
    int h = Math.abs(Arrays.hashCode(key));
    return h == Integer.MIN_VALUE ? Integer.MAX_VALUE : h;
  }

  // Same as Iceberg DateTimeUtil.daysFromDate / microsFromTimestamp / microsFromTimestamptz.
  static Integer days(int y, int m, int d) {
    return (int) ChronoUnit.DAYS.between(EPOCH.toLocalDate(), LocalDate.of(y, m, d));
  }

  static Long micros(LocalDateTime t) {
    return ChronoUnit.MICROS.between(EPOCH, t.atOffset(ZoneOffset.UTC));
  }

  static Long micros(OffsetDateTime t) {
    return ChronoUnit.MICROS.between(EPOCH, t);
  }

  static ByteBuffer bytes(int... values) {
    byte[] out = new byte[values.length];
    for (int i = 0; i < values.length; i++) {
      out[i] = (byte) values[i];
    }
    return ByteBuffer.wrap(out);
  }

  static Object[] key(Object... values) {
    return values;
  }

  static Map<String, Object[]> cases() {
    Map<String, Object[]> c = new LinkedHashMap<>();
    c.put("int_zero", key(0));
    c.put("int_one", key(1));
    c.put("int_minus_one", key(-1));
    c.put("int_42", key(42));
    c.put("int_max", key(Integer.MAX_VALUE));
    c.put("int_min", key(Integer.MIN_VALUE));
    c.put("int_minus_100", key(-100));
    c.put("int_hash_is_min_value", key(2147483617));
    c.put("tinyint_minus_5", key((int) (byte) -5));
    c.put("smallint_30000", key((int) (short) 30000));
    c.put("long_zero", key(0L));
    c.put("long_one", key(1L));
    c.put("long_minus_one", key(-1L));
    c.put("long_max", key(Long.MAX_VALUE));
    c.put("long_min", key(Long.MIN_VALUE));
    c.put("long_2pow32", key(1L << 32));
    c.put("long_big", key(123456789012345L));
    c.put("long_negative", key(-987654321098L));
    c.put("str_empty", key(""));
    c.put("str_a", key("a"));
    c.put("str_hello", key("hello"));
    c.put("str_punctuation", key("Hello, World!"));
    c.put("str_accented", key("café"));
    c.put("str_accents", key("naïve résumé"));
    c.put("str_cjk", key("中文字符"));
    c.put("str_japanese", key("日本語テキスト"));
    c.put("str_emoji", key("😀"));
    c.put("str_emoji_inside", key("a😀b"));
    c.put("str_clef", key("𝄞 music"));
    c.put("str_long", key("x".repeat(1000) + "ü"));
    c.put("str_mixed", key("Ünïcödé-😀-中"));
    c.put("date_2024_01_15", key(days(2024, 1, 15)));
    c.put("date_epoch", key(days(1970, 1, 1)));
    c.put("date_1900_01_01", key(days(1900, 1, 1)));
    c.put("date_9999_12_31", key(days(9999, 12, 31)));
    c.put("ts_2024", key(micros(LocalDateTime.of(2024, 1, 15, 10, 30, 45, 123456000))));
    c.put("ts_epoch", key(micros(LocalDateTime.of(1970, 1, 1, 0, 0))));
    c.put("ts_pre_epoch", key(micros(LocalDateTime.of(1900, 1, 1, 0, 0, 0, 1000))));
    c.put("tstz_2024_plus_2h",
        key(micros(OffsetDateTime.of(2024, 1, 15, 10, 30, 45, 123456000, ZoneOffset.ofHours(2)))));
    c.put("time_13_45_30", key(LocalTime.of(13, 45, 30, 123456000).toNanoOfDay() / 1000));
    c.put("bool_true", key(true));
    c.put("bool_false", key(false));
    c.put("dec_123_45", key(new BigDecimal("123.45")));
    c.put("dec_minus_123_45", key(new BigDecimal("-123.45")));
    c.put("dec_zero_scale_2", key(new BigDecimal("0.00")));
    c.put("dec_38_digits", key(new BigDecimal("12345678901234567890123456789.123456789")));
    c.put("dec_minus_38_nines", key(new BigDecimal("-99999999999999999999999999999999999999")));
    c.put("dec_2pow64", key(new BigDecimal(BigInteger.ONE.shiftLeft(64), 0)));
    c.put("dec_long_min", key(new BigDecimal(BigInteger.valueOf(Long.MIN_VALUE), 0)));
    c.put("dec_small", key(new BigDecimal("0.0001")));
    c.put("bin_empty", key(bytes()));
    c.put("bin_123", key(bytes(1, 2, 3)));
    c.put("bin_signed", key(bytes(0xff, 0x00, 0x7f, 0x80)));
    c.put("bin_hello", key(ByteBuffer.wrap("hello".getBytes(StandardCharsets.UTF_8))));
    c.put("fixed_deadbeef", key(bytes(0xde, 0xad, 0xbe, 0xef)));
    c.put("uuid_example", key(UUID.fromString("123e4567-e89b-12d3-a456-426614174000")));
    c.put("uuid_zero", key(UUID.fromString("00000000-0000-0000-0000-000000000000")));
    c.put("uuid_ones", key(UUID.fromString("ffffffff-ffff-ffff-ffff-ffffffffffff")));
    c.put("float_1_5", key(1.5f));
    c.put("float_minus_zero", key(-0.0f));
    c.put("float_nan", key(Float.NaN));
    c.put("float_max", key(Float.MAX_VALUE));
    c.put("double_1_5", key(1.5d));
    c.put("double_minus_zero", key(-0.0d));
    c.put("double_nan", key(Double.NaN));
    c.put("double_pi", key(Math.PI));
    c.put("double_inf", key(Double.POSITIVE_INFINITY));
    c.put("null_int", key((Object) null));
    c.put("comp_int_str", key(1, "a"));
    c.put("comp_long_str_date", key(123L, "中文", days(2024, 1, 15)));
    c.put("comp_str_null", key("x", null));
    c.put("comp_null_null", key(null, null));
    c.put("comp_str_str", key("order-1", "customer-42"));
    c.put("comp_six_types",
        key(7, -7L, "émoji😀", true,
            micros(LocalDateTime.of(2024, 1, 15, 10, 30, 45, 123456000)), new BigDecimal("123.45")));
    return c;
  }

  static Object parse(String field) {
    int colon = field.indexOf(':');
    String tag = field.substring(0, colon);
    String payload = field.substring(colon + 1);
    HexFormat hex = HexFormat.of();
    switch (tag) {
      case "n": return null;
      case "i": return Integer.parseInt(payload);
      case "l": return Long.parseLong(payload);
      case "b": return Boolean.parseBoolean(payload);
      case "s": return new String(hex.parseHex(payload), StandardCharsets.UTF_8);
      case "y": return ByteBuffer.wrap(hex.parseHex(payload));
      case "u": return UUID.fromString(payload);
      case "f": return Float.intBitsToFloat(Integer.parseInt(payload));
      case "g": return Double.longBitsToDouble(Long.parseLong(payload));
      case "d":
        String[] parts = payload.split(":");
        return new BigDecimal(new BigInteger(parts[0]), Integer.parseInt(parts[1]));
      default: throw new IllegalArgumentException("unknown tag " + tag);
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length == 0) {
      for (Map.Entry<String, Object[]> e : cases().entrySet()) {
        System.out.println("    \"" + e.getKey() + "\": " + amoroHash(e.getValue()) + ",");
      }
      return;
    }
    StringBuilder out = new StringBuilder();
    for (String line : Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8)) {
      String[] fields = line.split(",", -1);
      Object[] key = new Object[fields.length];
      for (int i = 0; i < fields.length; i++) {
        key[i] = parse(fields[i]);
      }
      out.append(amoroHash(key)).append('\n');
    }
    System.out.print(out);
  }
}
